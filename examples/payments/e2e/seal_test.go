package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// sealKey returns a fresh key as IDEM_SEAL_KEYS writes it, ID:BASE64.
func sealKey(t *testing.T, id string) string {
	t.Helper()
	b := make([]byte, idemseal.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return id + ":" + base64.StdEncoding.EncodeToString(b)
}

// storedResponse is what idem_records holds of a key's response.
func storedResponse(t *testing.T, db *pgtest.DB, key string) (headers *string, body []byte) {
	t.Helper()
	if err := db.QueryRow(context.Background(), `SELECT response_headers::text, response_body FROM idem_records
		WHERE operation = 'createPayment' AND idempotency_key = $1`, key).Scan(&headers, &body); err != nil {
		t.Fatal(err)
	}
	return headers, body
}

// TestSealedAtRest runs the service with IDEM_SEAL_KEYS and rotates its
// key the way docs/runbook.md says, over HTTP against a real PostgreSQL,
// with the built idemgen binary: stored responses are not plaintext in
// idem_records; after the new key is made current, old records replay
// under the retired key and new ones are sealed with the new one;
// `idemgen records reseal` moves the old ones to the new key, after which
// the old key can go and everything still replays byte for byte.
func TestSealedAtRest(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	k1, k2 := sealKey(t, "2026-01"), sealKey(t, "2026-03")
	svc := startService(t, db.URL, "", "IDEM_SEAL_KEYS="+k1)
	c := &harness.Client{URL: svc.url(), HTTP: &http.Client{Timeout: 30 * time.Second}}
	cli := buildIdemgen(t, db.URL)

	old := harness.NewKey()
	first := mustDo(t, c, "POST", "/payments", old, newPayment(4200))
	wantStatus(t, first, 201)
	var p paymentBody
	if err := first.Decode(&p); err != nil || p.ID == "" {
		t.Fatalf("payment: %v %s", err, first.RespBody)
	}
	replayed := func(key string, want []byte) {
		t.Helper()
		ex := mustDo(t, c, "POST", "/payments", key, newPayment(4200))
		if ex.Status != 201 || !ex.Replayed() || !bytes.Equal(ex.RespBody, want) ||
			!strings.HasPrefix(ex.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("replay of %s: %d replayed=%v %s %q, want %s", key, ex.Status, ex.Replayed(), ex.Header.Get("Content-Type"), ex.RespBody, want)
		}
	}
	replayed(old, first.RespBody)
	sealedWith := func(key string) string {
		t.Helper()
		headers, body := storedResponse(t, db, key)
		if headers != nil || bytes.Contains(body, []byte(p.ID)) || bytes.Contains(body, []byte("application/json")) {
			t.Fatalf("record %s is stored in plaintext: headers %v, body %q", key, headers, body)
		}
		id, ok := idemseal.KeyID(body)
		if !ok {
			t.Fatalf("record %s: body %q is not sealed", key, body)
		}
		return id
	}
	if id := sealedWith(old); id != "2026-01" {
		t.Fatalf("sealed with %q, want 2026-01", id)
	}
	// The on-call tool: the key id without keys, the body with them.
	if code, out := cli.run("get", old); code != 0 || !strings.Contains(out, "sealed with key 2026-01") || strings.Contains(out, p.ID) {
		t.Fatalf("records get without keys: exit %d\n%s", code, out)
	}
	cli.env = []string{"IDEM_SEAL_KEYS=" + k1}
	if code, out := cli.run("get", "-show-body", old); code != 0 || !strings.Contains(out, p.ID) {
		t.Fatalf("records get -show-body with the key: exit %d\n%s", code, out)
	}

	// Rotation: 2026-03 current, 2026-01 retired.
	restart := func(keys string) {
		t.Helper()
		if err := svc.proc.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
		svc.env = append(svc.env, "IDEM_SEAL_KEYS="+keys)
		svc.start()
	}
	restart(k2 + "," + k1)
	replayed(old, first.RespBody)
	fresh := harness.NewKey()
	second := mustDo(t, c, "POST", "/payments", fresh, newPayment(4200))
	wantStatus(t, second, 201)
	if id := sealedWith(fresh); id != "2026-03" {
		t.Fatalf("a new record sealed with %q, want the current key 2026-03", id)
	}

	// Re-seal, then drop the old key.
	cli.env = []string{"IDEM_SEAL_KEYS=" + k2 + "," + k1}
	code, out := cli.run("reseal", "-json")
	var rs struct {
		Scanned, Resealed int
	}
	if code != 0 || json.Unmarshal([]byte(out), &rs) != nil || rs.Resealed != 1 {
		t.Fatalf("records reseal: exit %d\n%s", code, out)
	}
	if id := sealedWith(old); id != "2026-03" {
		t.Fatalf("after reseal the old record is sealed with %q", id)
	}
	restart(k2)
	replayed(old, first.RespBody)
	replayed(fresh, second.RespBody)
	if logs := svc.proc.Logs(); strings.Contains(logs, strings.SplitN(k2, ":", 2)[1]) {
		t.Error("the service log shows the key's secret")
	}
}
