package payments_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
)

// front listens on a loopback port and hangs up on the first `drop`
// connections it accepts (a broker that is not ready); later ones are
// relayed to target. It counts what it accepted.
type front struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func newFront(t *testing.T, target string, drop int64) *front {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &front{ln: ln}
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if f.accepted.Add(1) <= drop {
				c.Close()
				continue
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			f.wg.Add(2)
			go func() { defer f.wg.Done(); _, _ = io.Copy(b, c); b.Close() }()
			go func() { defer f.wg.Done(); _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	return f
}

// TestConnectNATSRetries: a broker that hangs up on the service's first
// connection (one starting beside it) is tried again, and the second
// attempt connects.
func TestConnectNATSRetries(t *testing.T) {
	s, err := harness.StartNATS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	f := newFront(t, s.Addr().String(), 1)
	nc, err := payments.ConnectNATS(t.Context(), "nats://"+f.ln.Addr().String(), "test")
	if err != nil {
		t.Fatalf("ConnectNATS: %v (%d connections accepted)", err, f.accepted.Load())
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := f.accepted.Load(); got != 2 {
		t.Errorf("%d connections accepted, want 2 (the one hung up on, then the one that connected)", got)
	}
}

// TestConnectNATSGivesUp: a broker that never completes a connection ends
// ConnectNATS with the last attempt's error and the count of attempts.
func TestConnectNATSGivesUp(t *testing.T) {
	f := newFront(t, "", 1<<62)
	_, err := payments.ConnectNATS(t.Context(), "nats://"+f.ln.Addr().String(), "test")
	if err == nil || !strings.Contains(err.Error(), "(after 5 attempts)") {
		t.Fatalf("ConnectNATS: %v, want the error after 5 attempts", err)
	}
	if got := f.accepted.Load(); got != 5 {
		t.Errorf("%d connections accepted, want 5", got)
	}
}
