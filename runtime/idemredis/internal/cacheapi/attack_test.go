package cacheapi_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

// Where the engine's entries hold what the attacks edit (format 2): 'R',
// the version, the database's tag (12 bytes), the record's sum (32), the
// state, the fingerprint (32), the completion time (8), then the status
// as a uvarint; the body comes last before the 32-byte MAC.
const (
	fingerprintAt = 2 + 12 + 32 + 1
	statusAt      = fingerprintAt + 32 + 8
	macSize       = 32
)

// attack puts a forged entry into the cache and names the request that
// reads it.
type attack struct {
	name string
	want idem.CacheResult // what the engine makes of it; "" is CacheInvalid
	// forge writes into the cache, given the genuine entry of key a of
	// tenant "t1"; it returns the tenant and key of the request that finds
	// the forgery, and whether that key was never executed before.
	forge func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (tenant, key string, fresh bool, forged []byte)
}

// edited returns genuine with f applied to a copy.
func edited(genuine []byte, f func(v []byte)) []byte {
	v := bytes.Clone(genuine)
	f(v)
	return v
}

func set(t *testing.T, c *idemredis.Cache, key string, v []byte) {
	t.Helper()
	if err := c.Set(context.Background(), key, v, time.Minute); err != nil {
		t.Fatal(err)
	}
}

var attacks = []attack{
	{"copied to another key", "", func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		k := uuid.NewString()
		set(t, c, s.cacheKey(op, "t1", k), genuine)
		return "t1", k, true, genuine
	}},
	{"copied to another tenant", "", func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		set(t, c, s.cacheKey(op, "t2", a), genuine)
		return "t2", a, true, genuine
	}},
	{"body edited", "", func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		v := edited(genuine, func(v []byte) {
			// "amount":1 becomes "amount":9 in a plaintext body; a sealed
			// body has its last byte changed.
			if i := bytes.LastIndex(v, []byte(`"amount":1`)); i >= 0 {
				v[i+len(`"amount":`)] = '9'
			} else {
				v[len(v)-macSize-1] ^= 1
			}
		})
		set(t, c, s.cacheKey(op, "t1", a), v)
		return "t1", a, false, v
	}},
	{"status edited", "", func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		if genuine[statusAt] != 201&0x7f|0x80 || genuine[statusAt+1] != 1 {
			t.Fatalf("the entry's status is not 201 at byte %d: % x", statusAt, genuine[:statusAt+2])
		}
		v := edited(genuine, func(v []byte) { v[statusAt] = 200&0x7f | 0x80 })
		set(t, c, s.cacheKey(op, "t1", a), v)
		return "t1", a, false, v
	}},
	{"fingerprint edited", "", func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		v := edited(genuine, func(v []byte) { v[fingerprintAt] ^= 0x80 })
		set(t, c, s.cacheKey(op, "t1", a), v)
		return "t1", a, false, v
	}},
	{"not the engine's", "", func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		v := []byte("R\x02 written by someone else")
		set(t, c, s.cacheKey(op, "t1", a), v)
		return "t1", a, false, v
	}},
	{"format 1, body edited", idem.CacheMiss, func(t *testing.T, s *stack, c *idemredis.Cache, op, a string, genuine []byte) (string, string, bool, []byte) {
		// What an engine before the MAC wrote: 'R', 1, the state, the
		// fingerprint, then the rest as format 2 has it, without the MAC.
		v := append([]byte{'R', 1}, genuine[fingerprintAt-1:len(genuine)-macSize]...)
		if i := bytes.LastIndex(v, []byte(`"amount":1`)); i >= 0 {
			v[i+len(`"amount":`)] = '9'
		} else {
			v[len(v)-1] ^= 1
		}
		set(t, c, s.cacheKey(op, "t1", a), v)
		return "t1", a, false, v
	}},
}

// TestForgedEntries: whatever sits under a key in Redis — another key's
// or another tenant's entry copied there, the key's own entry with its
// body, status or fingerprint edited, bytes the engine never wrote — the
// generated server answers as without a cache: a key never executed runs
// once (not a replay of the copy), a committed key replays what
// PostgreSQL committed (not the edit, not a 409, not a 500), and the
// request counts as CacheInvalid. An entry in the format before the MAC
// (1) is a miss. With and without a Sealer, in both modes.
//
// Fails when cacheIdentity.open skips its checks (the tag, the record's
// sum, the MAC): the copies replay A's body for a key never executed,
// the edits replay a body, a status never committed, or 409 (with a
// Sealer, the copies and the edited body are still caught by
// cacheLookup's fallback on a response that does not open; without that
// too, they are 500s). Fails when format 1 is read as before: the edited
// body is replayed.
func TestForgedEntries(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	for _, op := range []string{"createPayment", "createCharge"} {
		for _, sealed := range []bool{false, true} {
			name := op + "/plain"
			if sealed {
				name = op + "/sealed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var sealer idem.Sealer
				if sealed {
					sealer = newSealer(t)
				}
				s := newStack(t, newDB(t, false), newCache(t, url), sealer)
				attacker := newCache(t, url)
				a := uuid.NewString()
				first := s.post(op, "t1", a, 1)
				if first.status != 201 || first.replayed {
					t.Fatalf("first: %d %s", first.status, first.body)
				}
				genuine := entry(t, attacker, s.cacheKey(op, "t1", a))
				asked := 1 // requests of key a so far
				for _, at := range attacks {
					tenant, key, fresh, forged := at.forge(t, s, attacker, op, a, genuine)
					r := s.post(op, tenant, key, 1)
					n := 1
					if !fresh {
						asked++
						n = asked
					}
					want := at.want
					if want == "" {
						want = idem.CacheInvalid
					}
					if o := s.outcome(op, tenant, key, n); o.Cache != want {
						t.Errorf("%s: the forged entry was taken as %q, want %q", at.name, o.Cache, want)
					}
					if fresh {
						// A key never executed runs now, exactly once.
						if r.status != 201 || r.replayed || paymentID(t, r.body) == paymentID(t, first.body) {
							t.Errorf("%s: %d replayed=%v %s; want a first execution of its own (A's is %s)", at.name, r.status, r.replayed, r.body, first.body)
						}
						retry := s.post(op, tenant, key, 1)
						if retry.status != 201 || !retry.replayed || retry.body != r.body {
							t.Errorf("%s: retry %d replayed=%v %s; want the replay of %s", at.name, retry.status, retry.replayed, retry.body, r.body)
						}
						if n := s.executions(op, tenant, key); n != 1 {
							t.Errorf("%s: %d executions, want 1", at.name, n)
						}
						continue
					}
					// A committed key replays what PostgreSQL committed.
					if r.status != 201 || !r.replayed || r.body != first.body {
						t.Errorf("%s: %d replayed=%v %s; want the replay of %s", at.name, r.status, r.replayed, r.body, first.body)
					}
					// The engine caches what PostgreSQL answered in place of
					// the forgery: wait for it, so that it does not overwrite
					// the next one.
					for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
						if v, _ := attacker.Get(context.Background(), s.cacheKey(op, "t1", a)); len(v) > 0 && v[0] == 'R' && !bytes.Equal(v, forged) {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("%s: the forgery was not replaced by PostgreSQL's answer", at.name)
						}
					}
				}
				if n := s.executions(op, "t1", a); n != 1 {
					t.Errorf("key a: %d executions, want 1", n)
				}
				// A retry that comes before the engine replaced a copied
				// entry finds it too: at least one each.
				if got, want := s.watch.rejected.Load(), int64(len(attacks)-1); got < want {
					t.Errorf("the observer was told of %d rejected entries, want at least %d", got, want)
				}
			})
		}
	}
}

// TestCacheKeysHoldTheTenant: two tenants using one key, with the same
// body, each execute once and each get their own replay from the cache:
// their entries live under different cache keys and each opens for its
// tenant only.
//
// Fails when the cache key is computed without the tenant (cacheLookup's
// sum of Key{Operation, Value}): the second tenant is answered with the
// first's payment.
func TestCacheKeysHoldTheTenant(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	s := newStack(t, newDB(t, false), newCache(t, url), nil)
	attacker := newCache(t, url)
	const op = "createPayment"
	k := uuid.NewString()
	first := map[string]reply{}
	for _, tenant := range []string{"t1", "t2"} {
		r := s.post(op, tenant, k, 5)
		if r.status != 201 || r.replayed {
			t.Fatalf("tenant %s: %d replayed=%v %s; want a first execution", tenant, r.status, r.replayed, r.body)
		}
		if o := s.outcome(op, tenant, k, 1); o.Cache != idem.CacheMiss {
			t.Errorf("tenant %s: the cache said %q, want %q", tenant, o.Cache, idem.CacheMiss)
		}
		first[tenant] = r
		entry(t, attacker, s.cacheKey(op, tenant, k))
	}
	if paymentID(t, first["t1"].body) == paymentID(t, first["t2"].body) {
		t.Fatalf("both tenants got payment %s", first["t1"].body)
	}
	for _, tenant := range []string{"t1", "t2"} {
		r := s.post(op, tenant, k, 5)
		if r.status != 201 || !r.replayed || r.body != first[tenant].body {
			t.Errorf("tenant %s: retry %d replayed=%v %s; want the replay of %s", tenant, r.status, r.replayed, r.body, first[tenant].body)
		}
		if o := s.outcome(op, tenant, k, 2); o.Cache != idem.CacheHit {
			t.Errorf("tenant %s: retry not answered from the cache: %q", tenant, o.Cache)
		}
		if n := s.executions(op, tenant, k); n != 1 {
			t.Errorf("tenant %s: %d executions", tenant, n)
		}
	}
}

// TestTwoDatabasesOneRedis: two deployments on two databases share one
// Redis, both with idemredis's default options (prefix included), and use
// the same key: neither sees the other's entries (the second finds
// nothing cached, not an entry to reject), each executes once and
// replays its own outcome from the cache.
//
// Fails when the cache keys lose their per-database namespace
// (cacheIdentity.cacheKey without id.ns): the second deployment finds the
// first's entry (CacheInvalid instead of CacheMiss; without the tag check
// and the MAC, a replay of the other database's payment).
func TestTwoDatabasesOneRedis(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	a := newStack(t, newDB(t, true), newCache(t, url), nil)
	b := newStack(t, newDB(t, true), newCache(t, url), nil)
	attacker := newCache(t, url)
	const op = "createPayment"
	k := uuid.NewString()
	if a.cacheKey(op, "", k) == b.cacheKey(op, "", k) {
		t.Errorf("both databases cache the key under %s", a.cacheKey(op, "", k))
	}
	first := map[*stack]reply{}
	for _, s := range []*stack{a, b} {
		r := s.post(op, "", k, 7)
		if r.status != 201 || r.replayed {
			t.Fatalf("%d replayed=%v %s; want a first execution", r.status, r.replayed, r.body)
		}
		if o := s.outcome(op, "", k, 1); o.Cache != idem.CacheMiss {
			t.Errorf("first request: the cache said %q, want %q", o.Cache, idem.CacheMiss)
		}
		first[s] = r
		entry(t, attacker, s.cacheKey(op, "", k))
	}
	for i, s := range []*stack{a, b} {
		r := s.post(op, "", k, 7)
		if r.status != 201 || !r.replayed || r.body != first[s].body {
			t.Errorf("database %d: retry %d replayed=%v %s; want the replay of %s", i, r.status, r.replayed, r.body, first[s].body)
		}
		if o := s.outcome(op, "", k, 2); o.Cache != idem.CacheHit {
			t.Errorf("database %d: retry not answered from the cache: %q", i, o.Cache)
		}
		if n := s.executions(op, "", k); n != 1 || s.svc.runs.Load() != 1 {
			t.Errorf("database %d: %d payments, %d handler runs; want 1", i, n, s.svc.runs.Load())
		}
	}
}
