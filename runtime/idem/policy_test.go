package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	if err := idem.DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	cases := []struct {
		name string
		edit func(*idem.Policy)
		want string
	}{
		{"ttl too long", func(p *idem.Policy) { p.TTL = 72 * time.Hour }, "ttl: 72h is outside 2h..24h"},
		{"ttl too short", func(p *idem.Policy) { p.TTL = time.Hour }, "ttl: 1h is outside 2h..24h"},
		{"header", func(p *idem.Policy) { p.Header = "Idempotency Key" }, "header:"},
		{"key format", func(p *idem.Policy) { p.KeyFormat = "ulid" }, "keyFormat:"},
		{"mode", func(p *idem.Policy) { p.Mode = "saga" }, "mode:"},
		{"lease", func(p *idem.Policy) { p.Mode, p.Lease = idem.ModeLease, 0 }, "lease:"},
		{"wait", func(p *idem.Policy) { p.InFlight, p.Wait = idem.InFlightWait, 0 }, "wait:"},
		{"maxHold under the lease", func(p *idem.Policy) { p.Mode, p.MaxHold = idem.ModeLease, 10*time.Second }, "maxHold: 10s must be at least the lease 30s"},
		{"maxHold past ttl", func(p *idem.Policy) { p.Mode, p.MaxHold = idem.ModeLease, 24*time.Hour }, "maxHold: 24h must be shorter than ttl 24h"},
		{"maxHold negative", func(p *idem.Policy) { p.Mode, p.MaxHold = idem.ModeLease, -time.Second }, "maxHold: -1s must be positive"},
		{"replay 2xx", func(p *idem.Policy) { p.ReplayStatuses = []int{201} }, "replayStatuses[0]: 201"},
		{"replay twice", func(p *idem.Policy) { p.ReplayStatuses = []int{409, 409} }, "replayStatuses[1]"},
		{"pointer", func(p *idem.Policy) { p.FingerprintExclude = []string{"a/b"} }, "fingerprint.exclude[0]"},
		{"pointer escape", func(p *idem.Policy) { p.FingerprintExclude = []string{"/a~2"} }, "fingerprint.exclude[0]"},
		{"schema change", func(p *idem.Policy) { p.OnSchemaChange = "ignore" }, "onSchemaChange:"},
		{"expired", func(p *idem.Policy) { p.OnExpired = "ignore" }, "onExpired:"},
		{"profile", func(p *idem.Policy) { p.Profile = "github" }, "profile:"},
	}
	for _, c := range cases {
		p := idem.DefaultPolicy()
		c.edit(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// TestInvalidPolicyAtStartup: an out-of-policy operation is an error from New
// (or Register), naming the operation; an unregistered one is refused per
// request with a 500 and no record.
func TestInvalidPolicyAtStartup(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	p := idem.DefaultPolicy()
	p.TTL = 72 * time.Hour
	op := &idem.Operation{ID: "createOrder", Method: "POST", Pattern: "/orders", Policy: p}
	_, err := idem.New(db, idem.Config{Operations: []*idem.Operation{op}})
	if err == nil || err.Error() != `idem: operation "createOrder": ttl: 72h is outside 2h..24h` {
		t.Fatalf("New: %v", err)
	}
	var reported error
	eng, err := idem.New(db, idem.Config{Hooks: idem.Hooks{OnError: func(_ context.Context, _ *idem.Operation, err error) { reported = err }}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Register(op); err == nil {
		t.Fatal("Register accepted an invalid operation")
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/orders", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", newKey())
	ran := false
	eng.Serve(rec, req, op, func([]byte) (idem.Prepared, error) {
		return idem.Prepared{Handler: func(context.Context, pgx.Tx) (*idem.Response, error) {
			ran = true
			return &idem.Response{Status: 200}, nil
		}}, nil
	})
	if rec.Code != 500 || ran || reported == nil || !strings.Contains(reported.Error(), "72h") {
		t.Fatalf("unregistered invalid operation: %d, ran %v, reported %v", rec.Code, ran, reported)
	}
}

func TestProblemMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err            error
		status         int
		code, reason   string
		detailContains string
	}{
		{idem.InvalidRequest(`query parameter "limit"`, errors.New("not a number")), 400, "ERR400_INVALID_REQUEST", "REQUEST_INVALID", `query parameter "limit": not a number`},
		{&http.MaxBytesError{Limit: 10}, 413, "ERR413_CONTENT_TOO_LARGE", "REQUEST_BODY_TOO_LARGE", ""},
		{idem.ErrBodyTooLarge, 413, "ERR413_CONTENT_TOO_LARGE", "REQUEST_BODY_TOO_LARGE", ""},
		{&idemproblem.Problem{Status: 402, Code: "ERR402_PAYMENT_REQUIRED", Reason: "INSUFFICIENT_FUNDS", Detail: "balance 3"}, 402, "ERR402_PAYMENT_REQUIRED", "INSUFFICIENT_FUNDS", "balance 3"},
		{errors.New("pq: password authentication failed for user secret"), 500, "ERR500_INTERNAL_SERVER_ERROR", "INTERNAL_ERROR", ""},
		{idem.ErrKeyRequired, 400, "ERR400_MISSING_OR_MALFORMED_HEADER", "IDEMPOTENCY_KEY_REQUIRED", ""},
		{idem.ErrInFlight, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS", ""},
		// The database went away: 503 with Retry-After, so clients retry with the same key.
		{fmt.Errorf("idem: read record: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), 503, "ERR503_SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE", ""},
		{fmt.Errorf("begin: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), 503, "ERR503_SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE", ""},
		{&pgconn.PgError{Code: "08006", Message: "connection failure"}, 503, "ERR503_SERVICE_UNAVAILABLE", "DATABASE_UNAVAILABLE", ""},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint secret"}, 500, "ERR500_INTERNAL_SERVER_ERROR", "INTERNAL_ERROR", ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		idem.WriteProblem(rec, httptest.NewRequest("GET", "/", nil), c.err)
		r := result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		r.wantProblem(t, c.status, c.code, c.reason)
		if c.status == 503 && rec.Header().Get("Retry-After") == "" {
			t.Errorf("%v: 503 without Retry-After", c.err)
		}
		if strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("problem leaks the error: %s", rec.Body)
		}
		if d, _ := r.problem(t)["detail"].(string); !strings.Contains(d, c.detailContains) {
			t.Errorf("%v: body %s lacks %q", c.err, rec.Body, c.detailContains)
		}
	}
	if !idem.IsConflict(idem.ProblemFor(idem.ErrFingerprintMismatch, idem.ProfileIETF)) ||
		idem.ProblemFor(idem.ErrFingerprintMismatch, idem.ProfileIETF).Status != 422 {
		t.Error("ietf profile: fingerprint conflict is not a 422 conflict")
	}
	if !idem.IsRequestError(idem.InvalidRequest("body", errors.New("x"))) || idem.IsRequestError(idem.ErrInFlight) {
		t.Error("IsRequestError")
	}
	if !idem.IsRetryable(idem.ErrOutcomeUnknown) || !idem.IsKeyError(idem.ErrKeyMalformed) {
		t.Error("predicates")
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	var outcomes []idem.Outcome
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{Hooks: idem.Hooks{
		OnOutcome: func(_ context.Context, op *idem.Operation, o idem.Outcome) {
			if op.ID == "createPayment" {
				outcomes = append(outcomes, o) // requests below are sequential
			}
		},
	}})
	key := newKey()
	e.post(key, payReq{Amount: 1})
	e.post(key, payReq{Amount: 1})
	e.post(key, payReq{Amount: 2})
	if len(outcomes) != 3 {
		t.Fatalf("%d outcomes", len(outcomes))
	}
	want := []struct {
		result   idem.Result
		state    idem.State
		status   int
		replayed bool
	}{{"executed", "COMPLETED", 201, false}, {"replayed", "COMPLETED", 201, true}, {"rejected", "", 409, false}}
	for i, w := range want {
		o := outcomes[i]
		if o.Result != w.result || o.State != w.state || o.Status != w.status || o.Replayed != w.replayed || o.Duration <= 0 {
			t.Errorf("outcome %d: %+v, want %+v", i, o, w)
		}
	}
	if !errors.Is(outcomes[2].Err, idem.ErrFingerprintMismatch) {
		t.Errorf("rejected outcome error: %v", outcomes[2].Err)
	}
}
