package idem_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// TestBodyOverTheLimitBeforeItIsSent: a request whose Content-Length is
// over Config.MaxBodyBytes is refused with 413 before a byte of its body
// is read: with Expect: 100-continue the client gets 413, not 100 Continue
// (and then a cut upload); without it, a client that announces 100 MiB and
// sends nothing gets 413 at once rather than a server waiting for the body.
// Either way the connection is closed after the answer, and no record is
// left: the key runs with a body that fits.
func TestBodyOverTheLimitBeforeItIsSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{MaxBodyBytes: 1 << 10})
	key := newKey()
	for _, expect := range []bool{true, false} {
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A bound for a server that waits for the body: the test fails then,
		// instead of hanging.
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
		hdr := ""
		if expect {
			hdr = "Expect: 100-continue\r\n"
		}
		fmt.Fprintf(conn, "POST /accounts/acc-1/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\n%sContent-Length: %d\r\n\r\n",
			key, hdr, 100<<20)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("expect=%v: no answer before the body: %v", expect, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(body), idemproblem.ReasonBodyTooLarge) {
			t.Fatalf("expect=%v: %d %s before the body; want 413 %s", expect, resp.StatusCode, body, idemproblem.ReasonBodyTooLarge)
		}
		if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
			t.Errorf("expect=%v: after the 413 the connection gave %q, %v; want it closed", expect, rest, err)
		}
	}
	if n := e.records(); n != 0 {
		t.Errorf("%d records after the 413s, want none", n)
	}
	if r := e.post(key, payReq{Amount: 1}); r.Status != 201 {
		t.Errorf("the key with a body that fits: %d %s", r.Status, r.Body)
	}
}
