package idemredis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

// logLines is a slog handler's output, one JSON object a line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// levels returns the level and message of every line so far.
func (l *logLines) levels(t *testing.T) [][2]string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][2]string
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, [2]string{rec.Level, rec.Msg})
	}
	return out
}

// failing calls Get until a call fails, then a few times more (the
// circuit's ErrUnavailable among them).
func failing(t *testing.T, c *idemredis.Cache) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := c.Get(ctx, "k"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still succeed with Redis killed")
		}
	}
	for range 10 {
		_, _ = c.Get(ctx, "k")
	}
}

// TestLogsOutageOnce: Redis killed under a working client is one warning
// (not one per failed call), its return one line at Info; a second
// outage within Options.Logger's minute (an hour here) is not reported
// again. Nothing is logged while the first connection is made.
//
// Fails when health.failed logs every failed call, or never; when
// recovered logs nothing; or when the minute between warnings is not
// kept (a third and fourth line).
func TestLogsOutageOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var logs logLines
	c := newCache(t, srv.URL, idemredis.Options{Timeout: time.Second, Failures: 2, Cooldown: 20 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	idemredis.SetWarnEvery(c, time.Hour)
	ctx := context.Background()
	eventually(t, "first Get", func() error { _, err := c.Get(ctx, "k"); return err })
	if got := logs.levels(t); len(got) != 0 {
		t.Fatalf("logged while connecting: %v", got)
	}

	srv.Kill()
	failing(t, c)
	got := logs.levels(t)
	if len(got) != 1 || got[0][0] != "WARN" {
		t.Fatalf("after Redis was killed: %v; want one warning", got)
	}
	srv.Restart()
	eventually(t, "Get after the restart", func() error { _, err := c.Get(ctx, "k"); return err })
	got = logs.levels(t)
	if len(got) != 2 || got[1][0] != "INFO" {
		t.Fatalf("after Redis came back: %v; want the warning and one line at Info", got)
	}

	// Again, within the hour: nothing more.
	srv.Kill()
	failing(t, c)
	srv.Restart()
	eventually(t, "Get after the second restart", func() error { _, err := c.Get(ctx, "k"); return err })
	if got := logs.levels(t); len(got) != 2 {
		t.Fatalf("a second outage within the hour was logged: %v", got)
	}
}

// TestLogsUnreachable: a Redis that is not there from the start (a wrong
// REDIS_URL, a dead server) is one warning once connecting has failed.
//
// Fails when failures of the first connection are never reported.
func TestLogsUnreachable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Kill()
	var logs logLines
	c := newCache(t, srv.URL, idemredis.Options{Timeout: time.Second, Cooldown: 20 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); len(logs.levels(t)) == 0; time.Sleep(5 * time.Millisecond) {
		if _, err := c.Get(ctx, "k"); err == nil {
			t.Fatal("Get succeeded with Redis down")
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing logged after 20 s of calls to a Redis that is down")
		}
	}
	for range 10 {
		_, _ = c.Get(ctx, "k")
	}
	if got := logs.levels(t); len(got) != 1 || got[0][0] != "WARN" {
		t.Fatalf("%v; want one warning", got)
	}
}
