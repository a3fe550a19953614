package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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
// Nor can the cache lie. Each entry names its database and its record
// (tenant, operation, key) and carries an HMAC-SHA256 under a key derived
// from a secret the database holds (migration 0006, idem_cache_secret):
// an entry copied from another key or another database, edited, forged or
// corrupted is not an answer but a miss (Outcome.Cache is CacheInvalid,
// and a CacheObserver is told). Keys begin with a namespace derived from
// the same secret, so services on different databases sharing one cache
// never use one key. What the cache can still do is withhold outcomes and
// delay duplicates (its markers are not authenticated): deny service, not
// forge it. See docs/security.md.
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

// DefaultCacheTTL is how long a committed outcome stays in Config.Cache
// when Config.CacheTTL is zero: a retry comes within seconds or minutes, and
// later ones are served by PostgreSQL.
const DefaultCacheTTL = 10 * time.Minute

// CacheResult says what Config.Cache did for a request (Outcome.Cache).
type CacheResult string

// Cache results.
const (
	// CacheHit: the cache answered (a replay, or a conflict), or a
	// duplicate waited on another request's marker for its outcome.
	CacheHit CacheResult = "hit"
	// CacheMiss: nothing usable was cached; PostgreSQL served the request
	// (a first execution, usually).
	CacheMiss CacheResult = "miss"
	// CacheFallback: the cache failed (an error, a time-out), or the
	// database's identity, which entries are bound to, could not be read
	// yet; PostgreSQL served the request as it would without a cache.
	CacheFallback CacheResult = "fallback"
	// CacheInvalid: the cache held an entry under the request's key that
	// is not the key's committed outcome in this database (written for
	// another database or key, altered, forged: ErrCacheEntryRejected);
	// PostgreSQL served the request as after a miss.
	CacheInvalid CacheResult = "invalid"
)

// CacheObserver, when an Observer implements it, is told of every cache
// call that failed, including the writes made after a response was sent,
// and of every entry rejected (err wraps ErrCacheEntryRejected): the
// engine went on without the cache each time.
type CacheObserver interface {
	CacheError(ctx context.Context, op *Operation, err error)
}

// How the engine's cache values start.
const (
	cachedMarker   = 'M' // an in-flight marker: 'M' and 8 random bytes
	cachedResponse = 'R' // a committed outcome (cacheIdentity.seal)
)

// markerTTL bounds an in-flight marker: a request whose holder died leaves
// one, and duplicates wait at most their own wait for it anyway.
const markerTTL = 10 * time.Second

// cacheMargin is taken off a record's remaining life for its cache entry,
// so that the cache forgets an outcome before PostgreSQL counts it expired
// (Redis's clock and PostgreSQL's run apart; the entry is written after the
// commit).
const cacheMargin = 5 * time.Second

// cached is an outcome as the cache holds it: what replay and classify need
// of a committed final record, its response in the stored (sealed) form.
type cached struct {
	state       State
	fingerprint []byte
	completedAt time.Time
	status      int32
	schema      string
	headers     []byte
	body        []byte
	left        time.Duration // the record's remaining life when read
	leftAt      time.Time     // when left was measured (this process's clock)
}

// cacheCall is what the cache did for a request; only cache.go writes
// it.
type cacheCall struct {
	key    string      // the request's key in the cache; "" when it was not asked
	result CacheResult // Outcome.Cache
	marker []byte      // the in-flight marker the request placed, if it did
}

// marked reports whether the request placed the in-flight marker: the
// cache had nothing at all under its key, and the mode may skip the
// replay read (a first execution, most likely).
func (c *cacheCall) marked() bool { return c.marker != nil }

// cacheLookup asks the cache about rq before PostgreSQL. answered: the
// request was served from it. Otherwise rq.cache says whether the cache
// had nothing at all (marked), and PostgreSQL decides as without a cache.
func (e *Engine) cacheLookup(rq *request) (answered bool, err error) {
	c := e.cfg.Cache
	ctx := rq.r.Context()
	id, err := e.cacheIdentity(ctx)
	if err != nil {
		e.cacheFailed(ctx, rq, err)
		return false, nil
	}
	sum, key := id.record(rq.key)
	rq.cache.key = key
	marker := make([]byte, 9)
	marker[0] = cachedMarker
	_, _ = rand.Read(marker[1:])
	v, marked, err := c.Lookup(ctx, key, marker, markerTTL)
	switch {
	case err != nil:
		// PostgreSQL decides, as without a cache.
		e.cacheFailed(ctx, rq, err)
		return false, nil
	case marked:
		rq.cache.result, rq.cache.marker = CacheMiss, marker
		return false, nil
	}
	if len(v) > 0 && v[0] == cachedMarker {
		// Another request holds the key now: wait for its outcome as long
		// as a duplicate in this process would wait for it, then ask
		// PostgreSQL.
		if v, err = e.cacheWait(ctx, rq); err != nil {
			e.cacheFailed(ctx, rq, err)
			return false, nil
		}
		if v == nil {
			rq.cache.result = CacheMiss
			return false, nil
		}
	}
	rec, err := id.open(v, &sum, rq.fp)
	switch {
	case errors.Is(err, errEntryOld):
		rq.cache.result = CacheMiss // written before an upgrade: replaced after this request
		return false, nil
	case err != nil:
		e.cacheInvalid(ctx, rq, err)
		return false, nil
	}
	switch act, aerr := e.classify(rq, &rec); act {
	case actReplay:
		err := e.replay(rq, &rec)
		if err != nil && !errors.Is(err, ErrSchemaChanged) {
			// An authentic entry the engine cannot replay now (a sealed
			// response whose key left the Sealer's ring): replay wrote
			// nothing, PostgreSQL decides.
			e.cacheInvalid(ctx, rq, fmt.Errorf("%w: %w", ErrCacheEntryRejected, err))
			return false, nil
		}
		rq.cache.result = CacheHit
		return true, err
	case actError:
		rq.cache.result = CacheHit
		return true, aerr
	}
	e.cacheInvalid(ctx, rq, errEntryFormat)
	return false, nil
}

// maxCachePoll is the longest pause between two polls of a marker's key.
// Only the leader of a key in each process polls (handoff.go), so a short
// pause costs few calls and answers the duplicates soon after the
// outcome is cached.
const maxCachePoll = 4 * time.Millisecond

// cacheWait polls the cache for the outcome of the request whose marker rq
// found, until its wait runs out: nil then.
func (e *Engine) cacheWait(ctx context.Context, rq *request) ([]byte, error) {
	deadline := time.Now().Add(e.duplicateWait(&rq.op.Policy))
	pause := time.Millisecond
	for {
		if time.Now().Add(pause).After(deadline) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		v, err := e.cfg.Cache.Get(ctx, rq.cache.key)
		if err != nil || (len(v) > 0 && v[0] == cachedResponse) {
			return v, err
		}
		if len(v) == 0 {
			return nil, nil // the holder kept no outcome: PostgreSQL decides
		}
		pause = min(2*pause, maxCachePoll)
	}
}

// cacheFailed notes a failed cache call: the request goes on without the
// cache.
func (e *Engine) cacheFailed(ctx context.Context, rq *request, err error) {
	rq.cache.result = CacheFallback
	e.reportCacheError(ctx, rq.op, err)
}

// cacheInvalid notes an entry that is not the key's outcome (err wraps
// ErrCacheEntryRejected): the request goes on as after a miss, and
// cacheAfter replaces the entry with PostgreSQL's answer.
func (e *Engine) cacheInvalid(ctx context.Context, rq *request, err error) {
	rq.cache.result = CacheInvalid
	e.reportCacheError(ctx, rq.op, err)
}

func (e *Engine) reportCacheError(ctx context.Context, op *Operation, err error) {
	for _, o := range e.cfg.Observers {
		if co, ok := o.(CacheObserver); ok {
			co.CacheError(ctx, op, err)
		}
	}
}

// cacheAfter runs once rq is answered: it caches the committed outcome rq
// stored or replayed from PostgreSQL, for no longer than the record lives,
// or else gives back the marker rq placed. In the background: the client
// has its response, and a failure only costs a later request a read.
func (e *Engine) cacheAfter(rq *request) {
	out, key, marker, op := rq.committed, rq.cache.key, rq.cache.marker, rq.op
	if rq.cache.result == CacheHit {
		out = nil // it came from the cache
	}
	id := e.cacheID.id.Load()
	if key == "" || id == nil || (out == nil && marker == nil) {
		return // the cache was not asked
	}
	ttl := e.cfg.CacheTTL
	if out != nil {
		ttl = min(ttl, out.left-time.Since(out.leftAt)-cacheMargin)
	}
	ctx, k := context.WithoutCancel(rq.r.Context()), rq.key
	go func() {
		var err error
		switch {
		case out != nil && ttl > 0:
			sum, _ := id.record(k)
			err = e.cfg.Cache.Set(ctx, key, id.seal(out, &sum), ttl)
		case marker != nil:
			err = e.cfg.Cache.Release(ctx, key, marker)
		}
		if err != nil {
			e.reportCacheError(ctx, op, err)
		}
	}()
}
