package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestOperatingTheService runs the service as a process with traces on
// (stdout), drives execute, replay, conflict, in flight and expiry over
// HTTP, and scrapes /metrics: each counter is exactly what the sequence
// implies. Its log holds an audit line per replay and conflict and no raw
// key; its trace output holds the requests' spans with key hashes only.
func TestOperatingTheService(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	gw := gateway.New()
	gwSrv := httptest.NewServer(gw.Handler())
	t.Cleanup(gwSrv.Close)
	svc := startService(t, db.URL, gwSrv.URL, "OTEL_TRACES_EXPORTER=stdout")
	c := &harness.Client{URL: svc.url(), HTTP: &http.Client{Timeout: 30 * time.Second}}
	k1, k2, k3 := harness.NewKey(), harness.NewKey(), harness.NewKey()

	wantStatus(t, mustDo(t, c, "POST", "/payments", k1, newPayment(100)), 201)  // executed
	wantStatus(t, mustDo(t, c, "POST", "/payments", k1, newPayment(100)), 201)  // replayed
	wantProblem(t, mustDo(t, c, "POST", "/payments", k1, newPayment(101)), 409, // conflict
		"ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
	release := gw.Hold() // the first request stays in flight until released
	defer release()
	first := make(chan *harness.Exchange)
	go func() { ex, _ := c.Do(context.Background(), "POST", "/payments", k2, newPayment(200)); first <- ex }()
	waitFor(t, "the gateway call", func() bool { return gw.Calls(k2) == 1 })
	wantProblem(t, mustDo(t, c, "POST", "/payments", k2, newPayment(200)), 409, // in flight
		"ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
	release()
	if ex := <-first; ex == nil || ex.Status != 201 {
		t.Fatalf("the slow first request: %v", ex)
	}
	wantStatus(t, mustDo(t, c, "POST", "/payments", k3, newPayment(300)), 201) // executed
	if _, err := db.Exec(context.Background(), `UPDATE idem_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, k3); err != nil {
		t.Fatal(err)
	}
	ex := mustDo(t, c, "POST", "/payments", k3, newPayment(300)) // expired, executed again
	wantStatus(t, ex, 201)
	if ex.Replayed() {
		t.Fatal("an expired key was replayed")
	}

	resp, err := http.Get(svc.url() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(raw)
	for _, line := range []string{
		`idem_requests_total{operation="createPayment",outcome="executed"} 3`,
		`idem_requests_total{operation="createPayment",outcome="replayed"} 1`,
		`idem_requests_total{operation="createPayment",outcome="conflict"} 1`,
		`idem_requests_total{operation="createPayment",outcome="in_flight"} 1`,
		`idem_requests_total{operation="createPayment",outcome="expired_executed"} 1`,
		`idem_new_keys_total{operation="createPayment"} 4`,
		`idem_conflicts_total{operation="createPayment"} 1`,
		`idem_replay_age_seconds_count{operation="createPayment"} 1`,
		`idem_stored_response_bytes_count{operation="createPayment"} 4`,
		`idem_phase_duration_seconds_count{operation="createPayment",phase="handler"} 4`,
		`idem_requests_in_flight{operation="createPayment"} 0`,
		// No NATS_URL: the four payment.created events wait in the outbox.
		`idem_outbox_pending 4`,
		`idem_outbox_dead 0`,
		`idem_outbox_up 1`,
		// The sweeper's pass at start-up.
		`idem_records{state="IN_PROGRESS"} 0`,
		`idem_records_abandoned 0`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	// Exactly these outcomes, no others; and bounded labels: no key, no
	// tenant (the example does not opt in), only the labels idemprom
	// documents.
	var outcomes []string
	allowed := map[string]bool{"operation": true, "outcome": true, "phase": true, "state": true, "action": true, "le": true}
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "idem_") {
			continue
		}
		if strings.HasPrefix(line, "idem_requests_total{") {
			outcomes = append(outcomes, line)
		}
		for _, k := range []string{k1, k2, k3} {
			if strings.Contains(line, k) {
				t.Errorf("a metric holds the key %s: %s", k, line)
			}
		}
		if i, j := strings.Index(line, "{"), strings.LastIndex(line, "}"); i > 0 && j > i {
			for _, pair := range strings.Split(line[i+1:j], ",") {
				name, _, _ := strings.Cut(pair, "=")
				if !allowed[name] {
					t.Errorf("a metric has the label %q: %s", name, line)
				}
			}
		}
	}
	if len(outcomes) != 5 {
		t.Errorf("idem_requests_total has %d series, want the 5 outcomes of the sequence:\n%s", len(outcomes), strings.Join(outcomes, "\n"))
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", grepLines(metrics, "idem_"))
	}

	if err := svc.proc.Stop(20 * time.Second); err != nil { // flushes the traces
		t.Fatal(err)
	}
	out := svc.proc.Logs()
	for _, k := range []string{k1, k2, k3} {
		if strings.Contains(out, k) {
			t.Errorf("the service's output (log and traces) contains the key %s", k)
		}
	}
	h1 := idem.Key{Operation: "createPayment", Value: k1}.Hash()
	for _, want := range []string{
		`msg="idem: audit" kind=replayed operation=createPayment key_hash=` + h1,
		`msg="idem: audit" kind=conflict operation=createPayment key_hash=` + h1,
		`msg="idem: request" operation=createPayment outcome=conflict key_hash=` + h1,
		`"Name":"idem createPayment"`, `"Name":"idem.handler"`, `"Name":"POST /payments"`,
		`"Key":"idem.key_hash","Value":{"Type":"STRING","Value":"` + h1 + `"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the service's output lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("service output:\n%s", out)
	}
}

func grepLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// idemgenCLI builds cmd/idemgen and runs it against dbURL.
type idemgenCLI struct {
	t     *testing.T
	bin   string
	dbURL string
	env   []string // more environment, e.g. IDEM_SEAL_KEYS
}

func buildIdemgen(t *testing.T, dbURL string) *idemgenCLI {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idemgen")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/idemgen/idemgen/cmd/idemgen").CombinedOutput(); err != nil {
		t.Fatalf("go build idemgen: %v\n%s", err, out)
	}
	return &idemgenCLI{t: t, bin: bin, dbURL: dbURL}
}

// run runs `idemgen records ARGS` and returns its exit status and output.
func (c *idemgenCLI) run(args ...string) (int, string) {
	c.t.Helper()
	cmd := exec.Command(c.bin, append([]string{"records"}, args...)...)
	cmd.Env = append(append(cmd.Environ(), "DATABASE_URL="+c.dbURL), c.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return code, out.String()
}

type cliRecord struct {
	State     string `json:"state"`
	Fence     int64  `json:"fence"`
	Abandoned bool   `json:"abandoned"`
	LeaseLive bool   `json:"lease_live"`
	Key       string `json:"key"`
	// LeaseExpiresAt is when a live lease lapses (nil without one).
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
}

func (c *idemgenCLI) get(key string) cliRecord {
	c.t.Helper()
	code, out := c.run("get", "-json", key)
	var recs []cliRecord
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 1 {
		c.t.Fatalf("records get %s: exit %d\n%s", key, code, out)
	}
	return recs[0]
}

// TestRecordsResolvesStuckAndUnknown drives a stuck claim and an UNKNOWN
// record of the running service to resolution with `idemgen records`: the
// service dies mid-charge (a claim left IN_PROGRESS), the on-call lists it,
// is refused while its lease is live, resolves it as expired once it lapses,
// and the client's next request runs; then a takeover whose recovery hook
// cannot reach the gateway leaves a record UNKNOWN, which is resolved as
// retryable once the gateway is back, and the retry records the payment
// with the charge already made. One charge per key throughout.
func TestRecordsResolvesStuckAndUnknown(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	gw := gateway.New()
	var lookupsDown atomic.Bool
	gwSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && lookupsDown.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		gw.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(gwSrv.Close)
	svc := startService(t, db.URL, gwSrv.URL, "SWEEP_INTERVAL=200ms")
	c := &harness.Client{URL: svc.url(), HTTP: &http.Client{Timeout: 30 * time.Second}}
	cli := buildIdemgen(t, db.URL)
	// gauge waits until the sweeper's count on /metrics reads line.
	gauge := func(line string) {
		t.Helper()
		waitFor(t, "/metrics to show "+line, func() bool {
			resp, err := http.Get(svc.url() + "/metrics")
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.Contains(string(b), line+"\n")
		})
	}

	// dieMidCharge starts a payment, waits until the gateway charged it and
	// kills the service before it records the payment.
	dieMidCharge := func(key string, amount int64) {
		release := gw.Hold() // charged, never answered: the service dies first
		go func() { _, _ = c.Do(context.Background(), "POST", "/payments", key, newPayment(amount)) }()
		waitFor(t, "the gateway to charge", func() bool { _, ok, _ := gw.Lookup(context.Background(), key); return ok })
		svc.kill9()
		release()
		svc.start()
	}
	waitAbandoned := func(key string) {
		waitFor(t, "the lease to lapse", func() bool { return cli.get(key).Abandoned })
	}

	t.Run("a stuck claim, resolved as expired", func(t *testing.T) {
		key := harness.NewKey()
		dieMidCharge(key, 700)
		if r := cli.get(key); r.State != "IN_PROGRESS" {
			t.Fatalf("after the crash the record is %s", r.State)
		}
		// The refusal is checked only with seconds of the lease left: the
		// lease lapses on its own while the CLI starts, and a resolve that
		// lands after it rightly succeeds; "a live lease, forced" below
		// checks the refusal on a renewed lease, which cannot lapse.
		if r := cli.get(key); r.LeaseLive && r.LeaseExpiresAt != nil && time.Until(*r.LeaseExpiresAt) > 3*time.Second {
			code, out := cli.run("resolve", "-as", "expired", "-reason", "client gave up", key)
			if code != 4 || !strings.Contains(out, "live lease") {
				t.Fatalf("resolving a live lease: exit %d, %s", code, out)
			}
		}
		// stats sees the stuck claim (the oldest live one) for scripts.
		code, out := cli.run("stats", "-json")
		var st struct {
			ByState []struct {
				State   string `json:"state"`
				Records int64  `json:"records"`
			} `json:"by_state"`
			OldestLive *time.Time `json:"oldest_live"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.OldestLive == nil {
			t.Fatalf("stats -json: exit %d\n%s", code, out)
		}
		inProgress := int64(0)
		for _, c := range st.ByState {
			if c.State == "IN_PROGRESS" {
				inProgress += c.Records
			}
		}
		if inProgress != 1 {
			t.Fatalf("stats -json counts %d IN_PROGRESS records, want 1\n%s", inProgress, out)
		}
		waitAbandoned(key)
		gauge(`idem_records_abandoned 1`)
		gauge(`idem_records{state="IN_PROGRESS"} 1`)
		code, out = cli.run("list", "-state", "IN_PROGRESS", "-json")
		if code != 0 || !strings.Contains(out, key) || !strings.Contains(out, `"abandoned": true`) {
			t.Fatalf("list -state IN_PROGRESS: exit %d\n%s", code, out)
		}
		if code, out := cli.run("resolve", "-as", "expired", "-by", "oncall", "-reason", "client gave up; charge stays at the gateway", key); code != 0 {
			t.Fatalf("resolve: exit %d\n%s", code, out)
		}
		if r := cli.get(key); r.State != "EXPIRED" {
			t.Fatalf("after resolve: %s", r.State)
		}
		// Who and why are kept with the record.
		if code, out := cli.run("get", key); code != 0 || !strings.Contains(out, "by oncall: IN_PROGRESS -> EXPIRED") ||
			!strings.Contains(out, "client gave up; charge stays at the gateway") {
			t.Fatalf("get after resolve: exit %d\n%s", code, out)
		}
		// Exit statuses scripts can tell apart: no such record, bad usage,
		// and a record in a state resolve does not change.
		for _, c := range []struct {
			code int
			args []string
		}{
			{3, []string{"get", harness.NewKey()}},
			{2, []string{"resolve", "-as", "done", "-reason", "x", key}},
			{2, []string{"resolve", "-as", "expired", key}}, // no -reason
			{4, []string{"resolve", "-as", "expired", "-reason", "again", key}},
		} {
			if code, out := cli.run(c.args...); code != c.code {
				t.Errorf("records %v: exit %d, want %d\n%s", c.args, code, c.code, out)
			}
		}
		// The key starts over; the gateway still knows its charge.
		ex := mustDo(t, c, "POST", "/payments", key, newPayment(700))
		wantStatus(t, ex, 201)
		if n := chargesFor(gw, key); n != 1 {
			t.Fatalf("%d charges for the key, want 1", n)
		}
		if l := readLedger(t, db); l.count[key] != 1 {
			t.Fatalf("%d payments for the key, want 1", l.count[key])
		}
	})

	t.Run("an UNKNOWN record, resolved as retryable", func(t *testing.T) {
		key := harness.NewKey()
		dieMidCharge(key, 800)
		lookupsDown.Store(true)
		waitAbandoned(key)
		// The retry takes the claim over; the recovery hook cannot ask the
		// gateway: 503, UNKNOWN.
		ex := mustDo(t, c, "POST", "/payments", key, newPayment(800))
		wantProblem(t, ex, 503, "ERR503_SERVICE_UNAVAILABLE", idemproblem.ReasonOutcomeUnknown)
		if r := cli.get(key); r.State != "UNKNOWN" {
			t.Fatalf("after the hook said Unknown: %s", r.State)
		}
		gauge(`idem_records{state="UNKNOWN"} 1`)
		code, out := cli.run("list", "-state", "UNKNOWN")
		if code != 0 || !strings.Contains(out, key) {
			t.Fatalf("list -state UNKNOWN: exit %d\n%s", code, out)
		}
		lookupsDown.Store(false)
		if code, out := cli.run("resolve", "-as", "retryable", "-by", "oncall", "-reason", "gateway back; it dedupes by key", key); code != 0 {
			t.Fatalf("resolve: exit %d\n%s", code, out)
		}
		code, out = cli.run("get", key)
		if code != 0 || !strings.Contains(out, "FAILED_RETRYABLE") || !strings.Contains(out, "by oncall: UNKNOWN -> FAILED_RETRYABLE") {
			t.Fatalf("get after resolve: exit %d\n%s", code, out)
		}
		ex = mustDo(t, c, "POST", "/payments", key, newPayment(800))
		wantStatus(t, ex, 201)
		var p paymentBody
		_ = ex.Decode(&p)
		charged, _, _ := gw.Lookup(context.Background(), key)
		if p.ChargeID != charged.ID || chargesFor(gw, key) != 1 {
			t.Fatalf("payment with charge %s, the gateway's %s, %d charges", p.ChargeID, charged.ID, chargesFor(gw, key))
		}
	})

	t.Run("a live lease, forced", func(t *testing.T) {
		// A request that hangs in the gateway holds a live, renewed lease.
		key := harness.NewKey()
		release := gw.Hold()
		defer release()
		hung := make(chan *harness.Exchange, 1)
		go func() { ex, _ := c.Do(context.Background(), "POST", "/payments", key, newPayment(900)); hung <- ex }()
		waitFor(t, "the gateway call", func() bool { return gw.Calls(key) == 1 })
		before := cli.get(key)
		if !before.LeaseLive {
			t.Fatalf("the running request's lease is not live: %+v", before)
		}
		if code, out := cli.run("resolve", "-as", "expired", "-reason", "holder hung", key); code != 4 {
			t.Fatalf("resolve without -force: exit %d, want 4\n%s", code, out)
		}
		code, out := cli.run("resolve", "-as", "expired", "-force", "-by", "oncall", "-reason", "holder hung", key)
		if code != 0 {
			t.Fatalf("resolve -force: exit %d\n%s", code, out)
		}
		after := cli.get(key)
		if after.State != "EXPIRED" || after.Fence <= before.Fence {
			t.Fatalf("after -force: %+v (before %+v), want EXPIRED with the fence moved on", after, before)
		}
		if code, out := cli.run("get", key); code != 0 || !strings.Contains(out, "forced") {
			t.Fatalf("get after -force: exit %d\n%s", code, out)
		}
		// The hung holder finishes but is fenced out: it stores nothing.
		release()
		ex := <-hung
		if ex == nil || ex.Status != 409 {
			t.Fatalf("the fenced-out holder answered %v, want 409 lease lost", ex)
		}
		if r := cli.get(key); r.State != "EXPIRED" {
			t.Fatalf("the fenced-out holder changed the record to %s", r.State)
		}
		// The key starts over; the gateway's charge is the one charge.
		wantStatus(t, mustDo(t, c, "POST", "/payments", key, newPayment(900)), 201)
		if n := chargesFor(gw, key); n != 1 {
			t.Fatalf("%d charges for the key, want 1", n)
		}
		if l := readLedger(t, db); l.count[key] != 1 {
			t.Fatalf("%d payments for the key, want 1", l.count[key])
		}
	})
}
