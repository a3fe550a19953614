package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// pgScript is the repository's throwaway-PostgreSQL script.
func pgScript(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	p, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "pg.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pgsh(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(pgScript(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestPostgresRestart restarts a private PostgreSQL server (its own, so
// that nobody else's tests are disturbed) under load. While it is down,
// requests fail cleanly - a 5xx problem or a transport error, never a 2xx
// that was not committed - and afterwards no key has two payments.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	pgtest.URL(t) // skip or fail like every database test
	dir, err := os.MkdirTemp("", "payments-pgrestart")
	if err != nil {
		t.Fatal(err)
	}
	out := pgsh(t, "start", dir)
	t.Cleanup(func() { pgsh(t, "stop", dir) })
	var dbURL string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "export DATABASE_URL="); ok {
			dbURL = strings.Trim(v, "'")
		}
	}
	if dbURL == "" {
		t.Fatalf("pg.sh start printed no DATABASE_URL: %q", out)
	}

	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := schema.MigrateFS(ctx, pool, payments.Migrations, "payments_schema_migrations"); err != nil {
		t.Fatal(err)
	}
	gw := gateway.New()
	gw.Set(gateway.Switches{Latency: 20 * time.Millisecond})
	h, err := newHandler(pool, gw)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	const keys, clientsPerKey = 50, 2
	lctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	st := newRetryStats()
	want := map[string]int64{}
	keyList := make([]string, keys)
	for i := range keyList {
		keyList[i] = harness.NewKey()
		want[keyList[i]] = int64(2000 + i)
	}

	// Every response must be a 201, a 409 in flight, or a 5xx; a 5xx must
	// be problem+json.
	var unclean atomic.Int32
	var mu sync.Mutex
	bad := map[string]int{}
	check := func(ex *harness.Exchange, err error) {
		if err != nil || ex.Status == 201 {
			return
		}
		p, isProblem := ex.Problem()
		switch {
		case ex.Status == 409 && isProblem && p.Reason == idemproblem.ReasonInProgress:
		case ex.Status >= 500 && isProblem:
		default:
			unclean.Add(1)
			mu.Lock()
			bad[ex.Format()]++
			mu.Unlock()
		}
	}

	var wg sync.WaitGroup
	var failed atomic.Int32
	for i, key := range keyList {
		for range clientsPerKey {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i*20) * time.Millisecond)
				c := &harness.Client{URL: srv.URL, HTTP: &http.Client{}}
				timeout := 2 * time.Second
				for attempt := 0; attempt < 300 && lctx.Err() == nil; attempt++ {
					actx, cancel := context.WithTimeout(lctx, timeout)
					ex, err := c.Do(actx, "POST", "/payments", key, newPayment(want[key]))
					cancel()
					st.note(key, ex, err)
					check(ex, err)
					if err == nil && ex.Status == 201 {
						return
					}
					time.Sleep(time.Duration(20+attempt*5) * time.Millisecond)
				}
				failed.Add(1)
			}()
		}
	}
	// Restart PostgreSQL twice while the clients run.
	for range 2 {
		time.Sleep(300 * time.Millisecond)
		pgsh(t, "restart", dir)
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d clients never got a 201", n)
	}
	if n := unclean.Load(); n > 0 {
		for f, n := range bad {
			t.Errorf("%d × an unclean failure:\n%s", n, f)
		}
	}
	for key, ids := range st.paymentOf {
		if len(ids) != 1 {
			t.Errorf("key %s: clients got %d different payments", key, len(ids))
		}
	}
	t.Logf("%d keys × %d clients, 2 restarts: %d attempts, %d transport errors, outcomes %v",
		keys, clientsPerKey, st.attempts, st.timeouts, st.byOutcome)
	checkBooks(t, readLedger(t, pool), gw, want)
}
