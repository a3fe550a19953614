package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// BenchmarkSlowUploads measures the service process's memory while 400
// connections each send all but the last byte of a 1 MiB body and then
// hold on: "unbounded" is the service with the limits it had before
// (no read, write or idle timeout, 1 MiB bodies and headers), "bounded"
// its defaults, "timeouts-only" the defaults but 1 MiB bodies. Reported: the process's resident memory when idle, its peak
// during the run (VmHWM), and how many of the 400 connections the server
// had closed 3 s after the uploads stalled.
//
//	scripts/pg.sh run bash -c 'cd examples/payments && go test -run "^$" -bench SlowUploads -benchtime 1x ./e2e/'
func BenchmarkSlowUploads(b *testing.B) {
	const conns, size = 400, 1 << 20
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"unbounded", []string{"HTTP_READ_TIMEOUT=0", "HTTP_WRITE_TIMEOUT=0", "HTTP_IDLE_TIMEOUT=0",
			"HTTP_MAX_BODY_BYTES=1048576", "HTTP_MAX_HEADER_BYTES=1048576"}},
		{"timeouts-only", []string{"HTTP_MAX_BODY_BYTES=1048576", "HTTP_MAX_HEADER_BYTES=1048576"}},
		{"bounded", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db := pgtest.New(b, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
			bin, err := harness.Build(b.Context(), b.TempDir(), false)
			if err != nil {
				b.Fatal(err)
			}
			addr, err := harness.FreeAddr()
			if err != nil {
				b.Fatal(err)
			}
			p, err := harness.Start(b.Context(), bin, addr, append([]string{"DATABASE_URL=" + db.URL}, tc.env...)...)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Kill()
			idle := procMemKiB(b, p.Pid(), "VmRSS")
			var closedSum int
			for range b.N {
				closedSum += stallUploads(b, addr, conns, size)
			}
			b.ReportMetric(float64(idle)/1024, "idle-MiB")
			b.ReportMetric(float64(procMemKiB(b, p.Pid(), "VmHWM"))/1024, "peak-MiB")
			b.ReportMetric(float64(closedSum)/float64(b.N), "closed-by-server")
		})
	}
}

// stallUploads opens n connections that each send headers and size-1 body
// bytes of a POST /payments, waits until all have written what the server
// would take (or been refused), holds them 3 more seconds, and returns how
// many the server closed by then.
func stallUploads(b *testing.B, addr string, n, size int) int {
	chunk := make([]byte, 32<<10)
	for i := range chunk {
		chunk[i] = ' '
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	closed := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Error(err)
				return
			}
			fmt.Fprintf(c, "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n", harness.NewKey(), size)
			for sent := 0; sent < size-1; sent += len(chunk) {
				w := chunk[:min(len(chunk), size-1-sent)]
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write(w); err != nil {
					break // the server stopped reading (413) or closed
				}
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	time.Sleep(3 * time.Second)
	for _, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := bufio.NewReader(c).ReadByte(); err == nil || !isTimeout(err) {
			closed++ // an answer (413) or EOF: the server let go
		}
		c.Close()
	}
	return closed
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// procMemKiB reads a field (VmRSS, VmHWM) of /proc/PID/status in KiB.
func procMemKiB(b *testing.B, pid int, field string) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatalf("%s: %q: %v", field, line, err)
			}
			return n
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
