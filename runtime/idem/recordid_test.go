package idem_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestRecordID: the engine finds records by an id it computes itself, and
// SQL (idem_record_id: the admin queries, the v2 import) computes the same
// one, for every tenant, operation and key, UTF-8 included; Key.Hash, in
// logs, is the id's first 8 bytes, which `idemgen records list -hash` looks
// up.
func TestRecordID(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hashes := map[string]string{} // key -> Outcome.KeyHash
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{
		Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Hooks: idem.Hooks{OnOutcome: func(_ context.Context, _ *idem.Operation, o idem.Outcome) {
			mu.Lock()
			defer mu.Unlock()
			hashes[o.Tenant] = o.KeyHash
		}},
	})
	// A tenant holds no control character (checkScope refuses one).
	tenants := []string{"", "acme", "Zürich ☃", "t'a b\\", "a-b", "0"}
	for _, tenant := range tenants {
		key := newKey()
		if r := e.post(key, payReq{Amount: 1}, withHeader("X-Tenant", tenant)); r.Status != 201 {
			t.Fatalf("tenant %q: %d %s", tenant, r.Status, r.Body)
		}
		// The replay finds the record by the engine's id.
		if r := e.post(key, payReq{Amount: 1}, withHeader("X-Tenant", tenant)); r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("tenant %q: no replay: %d %s", tenant, r.Status, r.Body)
		}
		var sqlHash string
		if n := e.count(`SELECT count(*) FROM idem_records WHERE tenant = $1 AND id = idem_record_id(tenant, operation, idempotency_key)`,
			tenant); n != 1 {
			t.Errorf("tenant %q: the engine's record id is not idem_record_id's", tenant)
		}
		if err := e.db.QueryRow(context.Background(), `SELECT substr(replace(id::text, '-', ''), 1, 16) FROM idem_records WHERE tenant = $1`,
			tenant).Scan(&sqlHash); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := hashes[tenant]
		mu.Unlock()
		if got != sqlHash {
			t.Errorf("tenant %q: Key.Hash %s, the id's first 8 bytes %s", tenant, got, sqlHash)
		}
	}
}

// TestIDCollision: a row whose id is the key's but whose tenant, operation
// and key are another's — what two keys whose ids collide would give — is
// refused (500), never answered for: the key's request does not get the
// other key's stored response, and does not run.
func TestIDCollision(t *testing.T) {
	t.Parallel()
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testPolicy(mode), idem.Config{})
			other, key := newKey(), newKey()
			if r := e.post(other, payReq{Amount: 7}); r.Status != 201 {
				t.Fatal(r.Status)
			}
			// The other key's record now sits where key's would: same
			// request (the fingerprint does not cover the key), same id.
			e.exec(`UPDATE idem_records SET id = idem_record_id(tenant, operation, $2) WHERE idempotency_key = $1`, other, key)
			r := e.post(key, payReq{Amount: 7})
			if r.Status != 500 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("key with a colliding record: %d %s %v, want 500 and no replay", r.Status, r.Body, r.Header)
			}
			if e.runs.Load() != 1 || e.payments() != 1 || e.state(other) != idem.StateCompleted {
				t.Fatalf("%d runs, %d payments, the other key's record %s", e.runs.Load(), e.payments(), e.state(other))
			}
		})
	}
}
