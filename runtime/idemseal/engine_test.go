package idemseal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// secret is what the handlers put in their responses and recovery data:
// with sealing on it must appear nowhere in idem_records.
const secret = "4111-1111-1111-1111"

// sealedService is an engine over a real PostgreSQL schema, served over
// HTTP: createThing (atomic) and chargeThing (lease, with a recovery hook),
// tenants from X-Tenant. POST /{op} serves the operation; the body is the
// request.
type sealedService struct {
	t      testing.TB
	pad    int // bytes of padding in each response body
	db     *pgtest.DB
	srv    *httptest.Server
	logs   *bytes.Buffer
	logMu  *sync.Mutex
	ran    map[string]int  // handler executions by operation
	hooked []idem.Recovery // what the recovery hook was told
	ops    map[string]*idem.Operation
	mu     sync.Mutex
}

func newSealedService(t testing.TB, db *pgtest.DB, sealer idem.Sealer) *sealedService {
	t.Helper()
	s := &sealedService{t: t, db: db, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}, ran: map[string]int{}, ops: map[string]*idem.Operation{}}
	atomic := idem.DefaultPolicy()
	atomic.SchemaVersion = "v1"
	lease := atomic
	lease.Mode, lease.Lease = idem.ModeLease, 5*time.Second
	// Both operations on one route, so that a record of one has the
	// fingerprint the other computes: only the sealing's additional data
	// tells them apart.
	// X-Card-Ref is a declared response header: stored, sealed with the rest.
	s.ops["createThing"] = &idem.Operation{ID: "createThing", Method: "POST", Pattern: "/things", Policy: atomic,
		ResponseHeaders: map[string][]string{"201": {"X-Card-Ref"}}}
	s.ops["chargeThing"] = &idem.Operation{ID: "chargeThing", Method: "POST", Pattern: "/things", Policy: lease}
	eng, err := idem.New(db, idem.Config{
		Operations: []*idem.Operation{s.ops["createThing"], s.ops["chargeThing"]},
		Scope:      func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Sealer:     sealer,
		Logger:     slog.New(slog.NewTextHandler(lockedBuffer{s.logMu, s.logs}, nil)),
		Recover: map[string]idem.RecoverFunc{"chargeThing": func(ctx context.Context, rec idem.Recovery) (idem.Decision, error) {
			s.mu.Lock()
			s.hooked = append(s.hooked, rec)
			s.mu.Unlock()
			return idem.Completed(&idem.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}},
				Body: append([]byte(`{"recovered":`), append(rec.Data, '}')...)}), nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := s.ops[strings.TrimPrefix(r.URL.Path, "/")]
		eng.Serve(w, r, op, func(body []byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				s.mu.Lock()
				s.ran[op.ID]++
				s.mu.Unlock()
				if op.Policy.Mode == idem.ModeLease {
					if err := idem.SaveRecoveryPoint(ctx, "charged", []byte(`{"card":"`+secret+`"}`)); err != nil {
						return nil, err
					}
				}
				h := http.Header{"Content-Type": {"application/json"}, "Location": {"/things/" + secret}, "X-Card-Ref": {"ref " + secret}}
				return &idem.Response{Status: 201, Header: h, Body: []byte(`{"card":"` + secret + `"` + pad(s.pad) + `}`)}, nil
			}}, nil
		})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func pad(n int) string {
	if n == 0 {
		return ""
	}
	return `,"pad":"` + strings.Repeat("x", n) + `"`
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (s *sealedService) log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logs.String()
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (s *sealedService) post(op, tenant, key string) answer {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.srv.URL+"/"+op, strings.NewReader(`{"n":1}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tenant", tenant)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// row is what idem_records holds for one record.
type row struct {
	state    string
	headers  []byte // response_headers as text (jsonb), nil when NULL
	body     []byte
	recovery []byte
}

func readRow(t *testing.T, db *pgtest.DB, tenant, op, key string) row {
	t.Helper()
	var r row
	var headers *string
	err := db.QueryRow(context.Background(), `SELECT state, response_headers::text, response_body, recovery_data FROM idem_records
		WHERE tenant = $1 AND operation = $2 AND idempotency_key = $3`, tenant, op, key).Scan(&r.state, &headers, &r.body, &r.recovery)
	if err != nil {
		t.Fatalf("record (%q, %s, %s): %v", tenant, op, key, err)
	}
	if headers != nil {
		r.headers = []byte(*headers)
	}
	return r
}

// copyRecord copies a record, in SQL, to another (tenant, operation, key):
// what someone with write access to the table could do to serve one
// record's stored response to another key's retries.
func copyRecord(t *testing.T, db *pgtest.DB, from, to [3]string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
			response_status, response_headers, response_body, attempts, fence, lease_expires_at, recovery_point, recovery_data,
			created_at, completed_at, expires_at)
		SELECT idem_record_id($4, $5, $6), $4, $5, $6, state, fingerprint, schema_version, response_status, response_headers, response_body, attempts, fence,
			lease_expires_at, recovery_point, recovery_data, created_at, completed_at, expires_at
		FROM idem_records WHERE tenant = $1 AND operation = $2 AND idempotency_key = $3`,
		from[0], from[1], from[2], to[0], to[1], to[2]); err != nil {
		t.Fatal(err)
	}
}

func sealerOf(t testing.TB, current idemseal.Key, retired ...idemseal.Key) *idemseal.Sealer {
	return idemseal.New(ring(t, current, retired...))
}

// TestEngineSealsRecords stores responses and recovery data through the
// engine with a Sealer, over HTTP against a real PostgreSQL: the table
// holds neither the body, nor the headers, nor the recovery data in
// plaintext, and replays give the original bytes and headers back.
func TestEngineSealsRecords(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	k1 := newKey(t, "k1")
	s := newSealedService(t, db, sealerOf(t, k1))
	key := uuid.NewString()

	first := s.post("createThing", "acme", key)
	again := s.post("createThing", "acme", key)
	if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("execute %d, replay %d (replayed %q)", first.status, again.status, again.header.Get("Idempotent-Replayed"))
	}
	if again.body != first.body || again.header.Get("Location") != "/things/"+secret || again.header.Get("Content-Type") != "application/json" ||
		again.header.Get("X-Card-Ref") != "ref "+secret {
		t.Fatalf("replay: %q %v, want %q with its Location, Content-Type and declared X-Card-Ref", again.body, again.header, first.body)
	}
	r := readRow(t, db, "acme", "createThing", key)
	if r.headers != nil {
		t.Errorf("response_headers is %s, want NULL (sealed with the body)", r.headers)
	}
	if !idemseal.IsSealed(r.body) || bytes.Contains(r.body, []byte(secret)) || bytes.Contains(r.body, []byte("Location")) || bytes.Contains(r.body, []byte("X-Card-Ref")) {
		t.Errorf("response_body is not sealed: %q", r.body)
	}
	if id, _ := idemseal.KeyID(r.body); id != "k1" {
		t.Errorf("sealed with %q, want k1", id)
	}

	// Lease mode: the recovery data the handler saved is sealed too.
	lkey := uuid.NewString()
	if a := s.post("chargeThing", "acme", lkey); a.status != 201 {
		t.Fatalf("chargeThing: %d %s", a.status, a.body)
	}
	lr := readRow(t, db, "acme", "chargeThing", lkey)
	for what, v := range map[string][]byte{"response_body": lr.body, "recovery_data": lr.recovery} {
		if !idemseal.IsSealed(v) || bytes.Contains(v, []byte(secret)) {
			t.Errorf("%s is not sealed: %q", what, v)
		}
	}
	if a := s.post("chargeThing", "acme", lkey); a.status != 201 || !strings.Contains(a.body, secret) {
		t.Errorf("lease replay: %d %q", a.status, a.body)
	}

	// The whole table: the secret is nowhere.
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM idem_records
		WHERE position($1::bytea IN coalesce(response_body, '')) > 0 OR position($1::bytea IN coalesce(recovery_data, '')) > 0
		   OR coalesce(response_headers::text, '') LIKE '%' || $2 || '%'`, []byte(secret), secret).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d records hold the secret in plaintext (%v)", n, err)
	}
}

// TestCopiedRecordDoesNotOpen copies a sealed record, in SQL, under another
// key, another tenant and another operation: a retry that finds the copy
// gets a 500 without the stored body, and the log says why. The original
// still replays.
func TestCopiedRecordDoesNotOpen(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	s := newSealedService(t, db, sealerOf(t, newKey(t, "k1")))
	key := uuid.NewString()
	if a := s.post("createThing", "acme", key); a.status != 201 {
		t.Fatalf("execute: %d", a.status)
	}
	from := [3]string{"acme", "createThing", key}
	other := uuid.NewString()
	for _, c := range []struct {
		what string
		to   [3]string
	}{
		{"another key", [3]string{"acme", "createThing", other}},
		{"another tenant", [3]string{"globex", "createThing", key}},
		{"another operation", [3]string{"acme", "chargeThing", key}},
	} {
		t.Run(c.what, func(t *testing.T) {
			copyRecord(t, db, from, c.to)
			a := s.post(c.to[1], c.to[0], c.to[2])
			if a.status != 500 || strings.Contains(a.body, secret) || a.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("a copy under %s: %d %q, want a 500 without the stored body", c.what, a.status, a.body)
			}
			if !strings.Contains(s.log(), "does not open") {
				t.Errorf("the log does not say why:\n%s", s.log())
			}
		})
	}
	s.mu.Lock()
	ran := s.ran["createThing"] + s.ran["chargeThing"]
	s.mu.Unlock()
	if ran != 1 {
		t.Errorf("handlers ran %d times, want once: a copy must not run the handler either", ran)
	}
	if a := s.post("createThing", "acme", key); a.status != 201 || !strings.Contains(a.body, secret) {
		t.Errorf("the original no longer replays: %d %q", a.status, a.body)
	}

	// The same for recovery data: a lapsed claim whose sealed recovery
	// data was copied from another key's claim is not handed to the hook.
	lkey, lother := uuid.NewString(), uuid.NewString()
	if a := s.post("chargeThing", "acme", lkey); a.status != 201 {
		t.Fatalf("chargeThing: %d", a.status)
	}
	abandon(t, db, "acme", "chargeThing", lkey) // as if its process died after saving
	copyRecord(t, db, [3]string{"acme", "chargeThing", lkey}, [3]string{"acme", "chargeThing", lother})
	if a := s.post("chargeThing", "acme", lother); a.status != 500 || strings.Contains(a.body, secret) {
		t.Fatalf("a claim with copied recovery data: %d %q, want 500", a.status, a.body)
	}
	s.mu.Lock()
	hooked := len(s.hooked)
	s.mu.Unlock()
	if hooked != 0 {
		t.Fatalf("the recovery hook ran %d times with recovery data that does not open", hooked)
	}
	// The original claim's takeover opens its own recovery data.
	a := s.post("chargeThing", "acme", lkey)
	if a.status != 201 || a.body != `{"recovered":{"card":"`+secret+`"}}` {
		t.Fatalf("takeover: %d %q", a.status, a.body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hooked) != 1 || s.hooked[0].Point != "charged" || string(s.hooked[0].Data) != `{"card":"`+secret+`"}` {
		t.Fatalf("the hook was told %+v, want the opened recovery data", s.hooked)
	}
}

// abandon makes a completed lease record look like a claim whose process
// died after it saved its recovery point.
func abandon(t *testing.T, db *pgtest.DB, tenant, op, key string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `UPDATE idem_records SET state = 'IN_PROGRESS', response_status = NULL,
			response_headers = NULL, response_body = NULL, completed_at = NULL, lease_expires_at = now() - interval '1 second'
		WHERE tenant = $1 AND operation = $2 AND idempotency_key = $3 AND recovery_data IS NOT NULL`, tenant, op, key); err != nil {
		t.Fatal(err)
	}
}

// TestEngineKeyRotation: records stored before sealing was on, under k1,
// and under k2 after k2 became current, all replay while the ring holds
// the keys that sealed them; new records take the current key; a record
// whose key was dropped fails with a 500 naming the key id, and one stored
// sealed is refused, not sent as ciphertext, by an engine without a Sealer.
func TestEngineKeyRotation(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	k1, k2 := newKey(t, "2026-01"), newKey(t, "2026-03")
	plain, old, fresh := uuid.NewString(), uuid.NewString(), uuid.NewString()

	if a := newSealedService(t, db, nil).post("createThing", "", plain); a.status != 201 {
		t.Fatal(a.status)
	}
	if a := newSealedService(t, db, sealerOf(t, k1)).post("createThing", "", old); a.status != 201 {
		t.Fatal(a.status)
	}
	rotated := newSealedService(t, db, sealerOf(t, k2, k1))
	if a := rotated.post("createThing", "", fresh); a.status != 201 {
		t.Fatal(a.status)
	}
	for key, want := range map[string]string{plain: "", old: "2026-01", fresh: "2026-03"} {
		r := readRow(t, db, "", "createThing", key)
		if id, _ := idemseal.KeyID(r.body); id != want {
			t.Errorf("record %s sealed with %q, want %q", key, id, want)
		}
		a := rotated.post("createThing", "", key)
		if a.status != 201 || a.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(a.body, secret) ||
			a.header.Get("Location") != "/things/"+secret {
			t.Errorf("replay of the record sealed with %q after rotation: %d %q %v", want, a.status, a.body, a.header)
		}
	}

	// k1 dropped too early: its record fails, the log names the key; the
	// others still replay.
	dropped := newSealedService(t, db, sealerOf(t, k2))
	if a := dropped.post("createThing", "", old); a.status != 500 || strings.Contains(a.body, secret) {
		t.Errorf("a record under a dropped key: %d %q, want 500", a.status, a.body)
	}
	if !strings.Contains(dropped.log(), `2026-01`) {
		t.Errorf("the log does not name the missing key:\n%s", dropped.log())
	}
	for _, key := range []string{plain, fresh} {
		if a := dropped.post("createThing", "", key); a.status != 201 || !strings.Contains(a.body, secret) {
			t.Errorf("replay with k2 alone: %d %q", a.status, a.body)
		}
	}

	// Sealing turned off again: sealed records are refused, never sent.
	off := newSealedService(t, db, nil)
	if a := off.post("createThing", "", fresh); a.status != 500 {
		t.Errorf("a sealed record without a Sealer: %d %q, want 500", a.status, a.body)
	}
	if !strings.Contains(off.log(), "no Sealer is configured") {
		t.Errorf("the log does not say the record is sealed:\n%s", off.log())
	}
}

// TestAlteredRecordIsRefused alters, in SQL, each stored field a replay
// sends — the status, the headers, the body — of a sealed record: the
// retry gets a 500 without the stored body (never the altered response),
// the handler does not run again, and the log says why. A record sealed
// before the status was (frame version 1, as the engine wrote it until
// then) still replays.
func TestAlteredRecordIsRefused(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	sealer := sealerOf(t, newKey(t, "k1"))
	s := newSealedService(t, db, sealer)
	for _, c := range []struct{ field, update, log string }{
		{"status", `response_status = 299`, "the status column says 299, the sealed status is 201"},
		{"headers", `response_headers = '{"Location": ["/elsewhere"]}'`, "the headers column is set beside a sealed response"},
		{"body", `response_body = overlay(response_body placing '\x00'::bytea from octet_length(response_body) - 3)`, "does not open"},
	} {
		t.Run(c.field, func(t *testing.T) {
			key := uuid.NewString()
			if a := s.post("createThing", "acme", key); a.status != 201 {
				t.Fatalf("execute: %d %s", a.status, a.body)
			}
			if a := s.post("createThing", "acme", key); a.status != 201 || a.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay before the change: %d %s", a.status, a.body)
			}
			if _, err := db.Exec(context.Background(), `UPDATE idem_records SET `+c.update+`
				WHERE tenant = 'acme' AND operation = 'createThing' AND idempotency_key = $1`, key); err != nil {
				t.Fatal(err)
			}
			a := s.post("createThing", "acme", key)
			if a.status != 500 || strings.Contains(a.body, secret) || a.header.Get("Idempotent-Replayed") != "" || a.header.Get("Location") != "" {
				t.Errorf("replay of a record whose %s was altered: %d %v %q, want a 500 without the stored response", c.field, a.status, a.header, a.body)
			}
			if !strings.Contains(s.log(), c.log) {
				t.Errorf("the log does not say %q:\n%s", c.log, s.log())
			}
		})
	}
	s.mu.Lock()
	if ran := s.ran["createThing"]; ran != 3 {
		t.Errorf("the handler ran %d times, want once per key", ran)
	}
	s.mu.Unlock()

	// Frame version 1: the headers and the body, without the status.
	key := uuid.NewString()
	headers := []byte(`{"Content-Type":["application/json"],"Location":["/things/1"]}`)
	plain := append(binary.AppendUvarint(nil, uint64(len(headers))), headers...)
	plain = append(plain, `{"card":"`+secret+`"}`...)
	aad := []byte("idemgen record v1\x00response\x00acme\x00createThing\x00" + key)
	sealed, err := sealer.Seal(context.Background(), plain, aad)
	if err != nil {
		t.Fatal(err)
	}
	var fp []byte
	if err := db.QueryRow(context.Background(), `SELECT fingerprint FROM idem_records LIMIT 1`).Scan(&fp); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint,
			schema_version, response_status, response_body, completed_at, expires_at)
		VALUES (idem_record_id('acme', 'createThing', $1), 'acme', 'createThing', $1, 'COMPLETED', $2, 'v1', 201, $3, now(), now() + interval '1 hour')`, key, fp, sealed); err != nil {
		t.Fatal(err)
	}
	a := s.post("createThing", "acme", key)
	if a.status != 201 || a.header.Get("Idempotent-Replayed") != "true" || a.body != `{"card":"`+secret+`"}` || a.header.Get("Location") != "/things/1" {
		t.Errorf("a record sealed in frame version 1: %d %v %q, want its stored response", a.status, a.header, a.body)
	}
}
