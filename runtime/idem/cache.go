package idem

import (
	"context"
	"time"
)

// Cache is an optional fast path in front of PostgreSQL (Config.Cache):
// a key-value store with expiry that answers replays without a statement
// and lets duplicates of a request in flight wait for its outcome instead
// of running into the database. runtime/idemredis implements it with
// Redis.
//
// PostgreSQL stays the authority. The engine only puts into the cache an
// outcome PostgreSQL committed (sealed as it is stored, when there is a
// Sealer), for no longer than the record lives; an in-flight marker only
// makes duplicates wait a bounded time, after which they ask PostgreSQL
// as if there were no cache. Whatever the cache does — errors, time-outs,
// losing entries, answering slowly — the engine then serves from
// PostgreSQL: no request runs twice, is answered with another's response,
// or fails because of the cache. Every method must honour ctx's deadline.
//
// Values are opaque to the cache; the engine tells its markers from stored
// outcomes by their encoding.
type Cache interface {
	// Lookup returns the value cached under key. When there is none it
	// stores marker under key for ttl, in the same step (atomically, as
	// SET NX does), and reports marked.
	Lookup(ctx context.Context, key string, marker []byte, ttl time.Duration) (value []byte, marked bool, err error)
	// Get returns the value cached under key, nil when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set caches value under key for ttl, whatever key held before.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Release removes key if it still holds marker.
	Release(ctx context.Context, key string, marker []byte) error
}
