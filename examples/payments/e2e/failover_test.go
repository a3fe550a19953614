package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestFailover runs the payments service against a real high-availability
// cluster (scripts/ha.sh: Patroni and etcd, three PostgreSQL nodes with a
// synchronous standby, HAProxy and PgBouncer in transaction mode in front)
// and, under clients that retry every key until it succeeds (backing off
// exponentially, with jitter, after attempts that got no answer), kills the
// primary with SIGKILL, switches over, kills the synchronous standby, and
// makes the primary read-only for a second (default_transaction_read_only,
// what a node that restarted in place as a standby answers through
// HAProxy).
// Three instances of the service share the cluster and the gateway: one
// connects through a multi-host connection string
// (target_session_attrs=read-write), one through HAProxy's one address
// without PgBouncer (and without target_session_attrs: for a moment around
// a promotion, or while a node restarts in place, its connections reach a
// server that takes no writes, SQLSTATE 25006), the third through
// PgBouncer (with pgx's statement cache off: PgBouncer 1.18 keeps no
// prepared statements across transactions). None is restarted.
//
// Afterwards, on the primary that is left: no key executed twice (a
// lease-mode createPayment reached the gateway's charge once, unless an
// earlier call left its caller unsure; an atomic createRefund wrote one
// refund), no acknowledged 2xx lost (every 201 a client got has its record
// and its business row), every key answered 201 with one resource, and no
// answer outside the contract (201, 409 in progress or lease lost, 503
// database unavailable or outcome unknown, or a client-side timeout: a 500
// fails it). The
// log reports, per fault and instance, the seconds from the fault to the
// first 201 for a key first sent after it (an older key can be answered
// from a commit that beat the fault, even from another request's outcome in
// the same process), and FAILOVER_REPORT names a file to write them to as
// JSON. Keys keep starting until 2 s after the fault struck; a phase in
// which none of them got a 201 fails.
func TestFailover(t *testing.T) {
	// Every test of this package but TestConformanceFollowsTheProfile runs
	// side by side with the others, each on a schema (or a cluster) of its
	// own: they mostly wait — on this
	// cluster, on PostgreSQL's restart, on killed processes, on the
	// gateway's latency and on leases — so make test runs the package
	// with -parallel 8 rather than one test per core.
	t.Parallel()
	pgtest.URL(t) // skip or fail like every database test
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "payments-ha")
	if err != nil {
		t.Fatal(err)
	}
	// Runs last: after the cluster is stopped, or when it never started.
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	ha := harness.HAFromEnv() // scripts/ha.sh run go test ...
	if ha == nil {
		if ha, err = harness.StartHA(sctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("cluster up in %.1f s", time.Since(start).Seconds())
	t.Cleanup(func() {
		if t.Failed() {
			st, _ := ha.Status(ctx)
			t.Logf("cluster at the end:\n%s", st)
		}
		if err := ha.Stop(ctx); err != nil {
			t.Error(err)
		}
	})

	direct := haPool(t, ha.URL)
	if err := schema.Migrate(ctx, direct); err != nil {
		t.Fatal(err)
	}
	if err := schema.MigrateFS(ctx, direct, payments.Migrations, "payments_schema_migrations"); err != nil {
		t.Fatal(err)
	}
	gw := gateway.New()
	gw.Set(gateway.Switches{Latency: 60 * time.Millisecond})
	services := []*haService{
		{name: "multi-host", pool: direct},
		{name: "haproxy", pool: haPool(t, ha.ProxyURL)},
		{name: "pgbouncer", pool: haPool(t, ha.BouncerURL+"&default_query_exec_mode=cache_describe", harness.BouncerConfig)},
	}
	for _, s := range services {
		// One log line per request, thousands per phase: to a file, not
		// through the test binary's stderr (a clean-clone run at load 30
		// had 756 requests blocked on that pipe at once).
		logFile, err := os.Create(filepath.Join(dir, "service-"+s.name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = logFile.Close() })
		h, err := newHandlerLogging(s.pool, gw, slog.New(slog.NewTextHandler(logFile, nil)))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		s.url = srv.URL
	}
	// Captured payments to refund, written directly.
	var refundable []string
	for i := range 40 {
		id := fmt.Sprintf("pay_failover_%d_%02d", start.UnixNano(), i)
		refundable = append(refundable, id)
		if _, err := direct.Exec(ctx, `INSERT INTO payments (id, idempotency_key, amount, currency, status, charge_id, captured_amount)
			VALUES ($1, $1, 100000000, 'EUR', 'captured', 'ch_'||$1, 100000000)`, id); err != nil {
			t.Fatal(err)
		}
	}

	load := &haLoad{t: t, services: services, refundable: refundable, keys: map[string]*haKey{},
		bouncerAdmin: bouncerAdminURL(ha.BouncerURL), dir: ha.Dir, logDir: dir}
	// Each fault returns when it struck: a kill when kill -9 returned, a
	// switchover when it was asked for.
	var killed string
	kill := func(which string) func(context.Context) (time.Time, error) {
		return func(ctx context.Context) (time.Time, error) {
			var err error
			killed, err = ha.Kill(ctx, which)
			return time.Now(), err
		}
	}
	rejoin := func(ctx context.Context) error { return ha.Rejoin(ctx, killed) }
	// The primary takes no writes for haReadOnlyFor: every write fails
	// with SQLSTATE 25006, new connections of the multi-host DSN find no
	// host that takes writes.
	var readOnlyDone <-chan error
	readOnly := func(ctx context.Context) (time.Time, error) {
		at, done, err := ha.ReadOnly(ctx, haReadOnlyFor)
		readOnlyDone = done
		return at, err
	}
	phases := []haPhase{
		{name: "kill -9 of the primary", fault: kill("leader"), after: rejoin},
		{name: "switchover", fault: func(ctx context.Context) (time.Time, error) {
			at := time.Now()
			_, err := ha.Switchover(ctx)
			return at, err
		}},
		{name: "loss of the synchronous standby", fault: kill("sync"), after: rejoin},
		{name: "read-only primary", fault: readOnly, after: func(context.Context) error {
			if readOnlyDone == nil {
				return nil // the fault failed, which the phase reported
			}
			return <-readOnlyDone
		}},
	}
	var report []haResult
	for _, ph := range phases {
		if only := os.Getenv("FAILOVER_ONLY"); only != "" && !strings.Contains(ph.name, only) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		if _, err := ha.Sync(pctx); err != nil { // a leader and a streaming synchronous standby
			cancel()
			t.Fatalf("before %s: %v", ph.name, err)
		}
		leader, _ := ha.Leader(pctx)
		res := load.run(pctx, ph)
		cancel()
		for _, r := range res {
			if r.RecoverySeconds < 0 {
				t.Errorf("%s via %s: no key first sent after the fault got a 201", ph.name, r.Service)
			}
			t.Logf("%s (leader was %s) via %s: first success %.1f s after the fault; %d keys, %d attempts: %s",
				ph.name, leader, r.Service, r.RecoverySeconds, r.Keys, r.Attempts, r.statuses())
		}
		report = append(report, res...)
		if t.Failed() {
			break
		}
		if ph.after != nil {
			if err := ph.after(ctx); err != nil {
				t.Fatalf("after %s: %v", ph.name, err)
			}
		}
	}
	if _, err := ha.Sync(ctx); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	load.check(ctx, direct, gw)
	if path := os.Getenv("FAILOVER_REPORT"); path != "" {
		b, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// haPool opens a pool of 16 connections on url; edits adjust its config.
func haPool(t *testing.T, url string, edits ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	for _, edit := range edits {
		edit(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// haService is one instance of the service over one path to the cluster.
type haService struct {
	name string
	pool *pgxpool.Pool
	url  string
}

// haPhase is one fault under load; after runs once its load is done.
type haPhase struct {
	name  string
	fault func(ctx context.Context) (time.Time, error)
	after func(ctx context.Context) error
}

// haResult is what one phase measured for one instance.
type haResult struct {
	Phase           string         `json:"phase"`
	Service         string         `json:"service"`
	RecoverySeconds float64        `json:"recovery_seconds"` // fault -> first 201 of a key first sent after it
	Keys            int            `json:"keys"`
	Attempts        int            `json:"attempts"`
	Statuses        map[string]int `json:"statuses"`
}

func (r haResult) statuses() string {
	var parts []string
	for s, n := range r.Statuses {
		parts = append(parts, fmt.Sprintf("%s ×%d", s, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// haKey is one idempotency key: one intent, sent by two clients at once.
type haKey struct {
	key, op, service, path string
	body                   any
	mu                     sync.Mutex
	ids                    map[string]bool // resources in 201 answers
	done                   int             // clients that got a 201
}

// haLoad drives the clients of every phase and keeps every key.
type haLoad struct {
	t          *testing.T
	services   []*haService
	refundable []string
	mu         sync.Mutex
	keys       map[string]*haKey
	unclean    []string
	// bouncerAdmin is PgBouncer's admin console, dumped with the leader's
	// activity when a phase's clients are still running after 45 s.
	bouncerAdmin string
	// dir holds the cluster's files: the last lines of HAProxy's and
	// PgBouncer's logs go into that dump too.
	dir string
	// logDir holds each instance's log, service-NAME.log.
	logDir string
}

const (
	haLoadFor     = 3 * time.Second         // new keys are started this long
	haLoadAfter   = 2 * time.Second         // and at least this long after the fault struck
	haFaultAt     = time.Second             // after the load starts
	haEvery       = 40 * time.Millisecond   // a new key per operation and instance
	haAttemptTO   = 3 * time.Second         // one attempt's HTTP timeout
	haKeyTO       = 100 * time.Second       // a key's clients give up after this
	haMaxWait     = 1000 * time.Millisecond // longest Retry-After honoured
	haMaxBackoff  = 3 * time.Second         // longest wait after an unanswered attempt
	haReadOnlyFor = time.Second             // the read-only primary phase's fault lasts this long
)

// run starts keys on every instance for haLoadFor, and for haLoadAfter past
// the moment the fault struck (injected after haFaultAt; a kill can take
// seconds on a loaded machine), and waits until every key's clients are done.
func (l *haLoad) run(ctx context.Context, ph haPhase) []haResult {
	type svcStats struct {
		mu       sync.Mutex
		ok       [][2]time.Time // the key's first attempt, the answer: every 201
		attempts int
		keys     int
		statuses map[string]int
	}
	stats := map[string]*svcStats{}
	for _, s := range l.services {
		stats[s.name] = &svcStats{statuses: map[string]int{}}
	}
	var faultAt time.Time         // set by the fault's goroutine before it closes struck
	struck := make(chan struct{}) // closed when the fault has struck

	var wg sync.WaitGroup
	client := &http.Client{Timeout: haAttemptTO}
	begin := time.Now()
	loading := func() bool {
		if time.Since(begin) < haLoadFor {
			return true
		}
		select {
		case <-struck:
			return time.Since(faultAt) < haLoadAfter
		default:
			return true
		}
	}
	n := 0
	faulted := false
	for loading() {
		for _, s := range l.services {
			for _, op := range []string{"createPayment", "createRefund"} {
				k := &haKey{key: harness.NewKey(), op: op, service: s.name, ids: map[string]bool{}}
				if op == "createPayment" {
					k.path, k.body = "/payments", newPayment(int64(1000+n))
				} else {
					k.path, k.body = "/payments/"+l.refundable[n%len(l.refundable)]+"/refunds", map[string]any{"amount": 1}
				}
				n++
				born := time.Now()
				l.mu.Lock()
				l.keys[k.key] = k
				l.mu.Unlock()
				st := stats[s.name]
				st.mu.Lock()
				st.keys++
				st.mu.Unlock()
				for range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c := &harness.Client{URL: s.url, HTTP: client}
						kctx, cancel := context.WithTimeout(ctx, haKeyTO)
						defer cancel()
						unanswered := 0 // attempts in a row that got no answer
						for kctx.Err() == nil {
							ex, err := c.Do(kctx, "POST", k.path, k.key, k.body)
							label, wait := l.classify(ex, err)
							// Unanswered attempts back off exponentially, with
							// jitter, as SDKs do: retrying a timed-out attempt
							// every 100 ms turned a machine slowed by other
							// work into a retry storm (at load 13, 7,051
							// client timeouts in one phase, keys unanswered
							// after 100 s).
							if err != nil {
								unanswered++
								wait = min(wait<<min(unanswered-1, 5), haMaxBackoff)
								wait = wait/2 + rand.N(wait/2+1)
							} else {
								unanswered = 0
							}
							st.mu.Lock()
							st.attempts++
							st.statuses[label]++
							if label == "201" || label == "201 replayed" {
								st.ok = append(st.ok, [2]time.Time{born, time.Now()})
							}
							st.mu.Unlock()
							if label == "201" || label == "201 replayed" {
								var v struct{ ID string }
								_ = json.Unmarshal(ex.RespBody, &v)
								k.mu.Lock()
								k.ids[v.ID] = true
								k.done++
								k.mu.Unlock()
								return
							}
							select {
							case <-kctx.Done():
							case <-time.After(wait):
							}
						}
					}()
				}
			}
		}
		if !faulted && time.Since(begin) >= haFaultAt {
			faulted = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				at, err := ph.fault(ctx)
				if err != nil {
					l.t.Errorf("%s: %v", ph.name, err)
				}
				faultAt = at
				close(struck)
			}()
		}
		time.Sleep(haEvery)
	}
	stuck := make(chan struct{})
	go func() { wg.Wait(); close(stuck) }()
	select {
	case <-stuck:
	case <-time.After(45 * time.Second):
		buf := make([]byte, 16<<20)
		n := goruntime.Stack(buf, true)
		_ = os.WriteFile("/tmp/failover-stacks.txt", buf[:n], 0o644)
		l.dumpLeader(ctx)
		if u := l.bouncerAdmin; u != "" {
			if c, err := pgx.Connect(ctx, u); err == nil {
				for _, q := range []string{"SHOW POOLS", "SHOW CLIENTS", "SHOW SERVERS"} {
					rows, err := c.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
					if err != nil {
						l.t.Logf("%s: %v", q, err)
						continue
					}
					vals, _ := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
					l.t.Logf("%s: %d rows: %v", q, len(vals), vals)
				}
				c.Close(ctx)
			}
		}
		for _, f := range []string{"haproxy.log", "pgbouncer.log"} {
			l.t.Logf("last lines of %s:\n%s", f, tailFile(filepath.Join(l.dir, f), 40))
		}
		for _, s := range l.services {
			l.t.Logf("last lines of the %s instance's log:\n%s", s.name, tailFile(filepath.Join(l.logDir, "service-"+s.name+".log"), 20))
		}
		for _, s := range l.services {
			st := s.pool.Stat()
			l.t.Logf("%s pool after 45 s: acquired %d idle %d total %d, acquire waits %d", s.name,
				st.AcquiredConns(), st.IdleConns(), st.TotalConns(), st.EmptyAcquireCount())
		}
		<-stuck
	}
	var out []haResult
	for _, s := range l.services {
		st := stats[s.name]
		r := haResult{Phase: ph.name, Service: s.name, Keys: st.keys, Attempts: st.attempts, Statuses: st.statuses,
			RecoverySeconds: -1}
		var first time.Time
		for _, ok := range st.ok {
			if ok[0].After(faultAt) && (first.IsZero() || ok[1].Before(first)) {
				first = ok[1]
			}
		}
		if !first.IsZero() {
			r.RecoverySeconds = first.Sub(faultAt).Seconds()
		}
		out = append(out, r)
	}
	return out
}

// classify names an answer and says how long to wait before the next
// attempt; an answer outside the contract is noted.
func (l *haLoad) classify(ex *harness.Exchange, err error) (string, time.Duration) {
	wait := 100 * time.Millisecond
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout") {
			return "client timeout", wait
		}
		l.note(fmt.Sprintf("transport error: %v", err))
		return "transport error", wait
	}
	if ex.Status == 201 {
		if ex.Replayed() {
			return "201 replayed", 0
		}
		return "201", 0
	}
	if s, e := strconv.Atoi(ex.Header.Get("Retry-After")); e == nil && s > 0 {
		wait = min(time.Duration(s)*time.Second, haMaxWait)
	}
	p, ok := ex.Problem()
	label := fmt.Sprintf("%d %s", ex.Status, p.Reason)
	switch {
	case ok && ex.Status == 409 && (p.Reason == idemproblem.ReasonInProgress || p.Reason == idemproblem.ReasonLeaseLost):
	case ok && ex.Status == 503 && (p.Reason == idemproblem.ReasonDatabaseDown || p.Reason == idemproblem.ReasonOutcomeUnknown):
	default:
		l.note(ex.Format())
	}
	return label, wait
}

func (l *haLoad) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unclean = append(l.unclean, s)
}

// check compares what the clients were told with what the primary holds.
func (l *haLoad) check(ctx context.Context, db *pgxpool.Pool, gw *gateway.Simulator) {
	t := l.t
	audit := gw.Audit()
	records := map[string]string{}
	rows, err := db.Query(ctx, `SELECT idempotency_key, state FROM idem_records`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k, s string
		if err := rows.Scan(&k, &s); err != nil {
			t.Fatal(err)
		}
		records[k] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	resources := map[string]map[string]bool{} // key -> ids of payments or refunds
	for _, q := range []string{`SELECT idempotency_key, id FROM payments`, `SELECT idempotency_key, id FROM refunds`} {
		rows, err := db.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Key, ID string }])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ids {
			if resources[r.Key] == nil {
				resources[r.Key] = map[string]bool{}
			}
			resources[r.Key][r.ID] = true
		}
	}
	var twice, unexplained, lost, unanswered, maxRuns, ambiguous int
	for _, k := range l.keys {
		runs := len(resources[k.key])
		if k.op == "createPayment" {
			a := audit[k.key]
			runs = a.Raw
			ambiguous += a.Ambiguous
			if a.Raw > 1+a.Ambiguous {
				unexplained++
				t.Errorf("%s %s via %s: the gateway's charge was reached %d times, %d left the caller unsure: charged twice",
					k.op, k.key, k.service, a.Raw, a.Ambiguous)
			}
			if n := len(resources[k.key]); n > 1 {
				t.Errorf("%s %s: %d payments", k.op, k.key, n)
			}
		} else if runs > 1 {
			t.Errorf("%s %s via %s: %d refunds committed", k.op, k.key, k.service, runs)
		}
		if runs > 1 {
			twice++
		}
		maxRuns = max(maxRuns, runs)
		if k.done != 2 {
			unanswered++
			t.Errorf("%s %s via %s: %d of 2 clients got a 201", k.op, k.key, k.service, k.done)
			continue
		}
		if len(k.ids) != 1 {
			t.Errorf("%s %s via %s: clients got %d different resources", k.op, k.key, k.service, len(k.ids))
		}
		for id := range k.ids {
			if !resources[k.key][id] || records[k.key] != "COMPLETED" {
				lost++
				t.Errorf("%s %s via %s: 201 with %s acknowledged, but the primary holds record %q and resources %v",
					k.op, k.key, k.service, id, records[k.key], resources[k.key])
			}
		}
	}
	t.Logf("after all faults: %d keys; executed twice: %d (unexplained %d, at most %d executions of a key; %d gateway calls left their caller unsure); acknowledged and lost: %d; unanswered: %d",
		len(l.keys), twice, unexplained, maxRuns, ambiguous, lost, unanswered)
	if len(l.unclean) > 0 {
		counts := map[string]int{}
		for _, u := range l.unclean {
			counts[u]++
		}
		for u, n := range counts {
			t.Errorf("%d× an answer outside the contract:\n%s", n, u)
		}
	}
}
