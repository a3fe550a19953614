package cacheapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis/internal/cacheapi"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

// TestCacheBeforeIdentity: an engine that cannot read its database's
// cache secret at start-up (here its role may not, yet) starts anyway,
// says so in the log, and serves without the cache (fallback, never an
// unauthenticated entry); once the secret can be read, a later request
// reads it and the cache serves.
//
// Fails when New refuses a database it cannot ask, or when the identity
// is never read again after New.
func TestCacheBeforeIdentity(t *testing.T) {
	t.Parallel()
	url0 := redistest.URL(t)
	db := newDB(t, false)
	ctx := context.Background()
	role := "cache_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN PASSWORD 'x'",
		"GRANT USAGE ON SCHEMA " + db.Schema + " TO " + role,
		"GRANT ALL ON ALL TABLES IN SCHEMA " + db.Schema + " TO " + role,
		"GRANT ALL ON ALL SEQUENCES IN SCHEMA " + db.Schema + " TO " + role,
		"REVOKE ALL ON idem_cache_secret FROM " + role,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		_, _ = db.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = db.Exec(context.Background(), "DROP ROLE "+role)
	})
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "x")
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	var logs logBuffer
	s := newStackOn(t, db, pool, newCache(t, url0), nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(logs.String(), "the cache is not used until the database's identity can be read") {
		t.Errorf("New logged %q; want the warning that the cache is not used", logs.String())
	}
	const op = "createPayment"
	k := uuid.NewString()
	first := s.post(op, "", k, 3)
	if first.status != 201 || first.replayed {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	if o := s.outcome(op, "", k, 1); o.Cache != idem.CacheFallback {
		t.Errorf("without the secret the cache said %q, want %q", o.Cache, idem.CacheFallback)
	}

	if _, err := db.Exec(ctx, "GRANT SELECT ON idem_cache_secret TO "+role); err != nil {
		t.Fatal(err)
	}
	// Retries until one is answered from the cache: the engine tries the
	// secret again (at most once a second), then caches the outcome.
	for n, deadline := 2, time.Now().Add(30*time.Second); ; n++ {
		r := s.post(op, "", k, 3)
		if r.status != 201 || !r.replayed || r.body != first.body {
			t.Fatalf("retry %d: %d replayed=%v %s; want the replay of %s", n, r.status, r.replayed, r.body, first.body)
		}
		if s.outcome(op, "", k, n).Cache == idem.CacheHit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no retry answered from the cache in 30 s after the secret became readable: %v", s.watch.caches())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := s.executions(op, "", k); n != 1 {
		t.Errorf("%d payments", n)
	}
}

// TestCacheSecretMissing: a database whose schema lacks idem_cache_secret
// (applied by hand, without migration 0006) is refused at start-up when
// the engine has a cache, with idem.ErrSchemaMissing naming the table;
// without a cache it is not needed.
//
// Fails when prepareCache only logs a missing table: the service would
// run with a cache it never uses.
func TestCacheSecretMissing(t *testing.T) {
	t.Parallel()
	url0 := redistest.URL(t)
	db := newDB(t, false)
	if _, err := db.Exec(context.Background(), "DROP TABLE idem_cache_secret"); err != nil {
		t.Fatal(err)
	}
	_, err := idem.New(db, idem.Config{Operations: cacheapi.IdempotentOperations, Cache: newCache(t, url0)})
	if !errors.Is(err, idem.ErrSchemaMissing) || !strings.Contains(err.Error(), "idem_cache_secret") {
		t.Fatalf("New with a cache = %v; want ErrSchemaMissing naming idem_cache_secret", err)
	}
	if _, err := idem.New(db, idem.Config{Operations: cacheapi.IdempotentOperations}); err != nil {
		t.Fatalf("New without a cache = %v", err)
	}
}
