package idem

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
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
	// CacheFallback: the cache failed (an error, a time-out, a value it
	// should not hold); PostgreSQL served the request as it would without
	// a cache.
	CacheFallback CacheResult = "fallback"
)

// CacheObserver, when an Observer implements it, is told of every cache
// call that failed, including the writes made after a response was sent
// (the engine went on without the cache each time).
type CacheObserver interface {
	CacheError(ctx context.Context, op *Operation, err error)
}

// How the engine's cache values start.
const (
	cachedMarker   = 'M' // an in-flight marker: 'M' and 8 random bytes
	cachedResponse = 'R' // a committed outcome (encodeCached)
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

// encodeCached is a cache value: 'R', version 1, the state, the
// fingerprint, completion time (Unix microseconds), status, schema version
// and headers (uvarint-prefixed), and the body.
func encodeCached(c *cached) []byte {
	b := make([]byte, 0, 64+len(c.schema)+len(c.headers)+len(c.body))
	b = append(b, cachedResponse, 1)
	if c.state == StateFailedReplayable {
		b = append(b, 'F')
	} else {
		b = append(b, 'C')
	}
	b = append(b, c.fingerprint...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.completedAt.UnixMicro()))
	b = binary.AppendUvarint(b, uint64(c.status))
	b = binary.AppendUvarint(b, uint64(len(c.schema)))
	b = append(b, c.schema...)
	b = binary.AppendUvarint(b, uint64(len(c.headers)))
	b = append(b, c.headers...)
	return append(b, c.body...)
}

var errBadCached = errors.New("idem: cache: a value the engine did not write")

// decodeCached is encodeCached's inverse, as the record row replay and
// classify read.
func decodeCached(v []byte, fp []byte) (store.GetRecordRow, error) {
	var rec store.GetRecordRow
	if len(v) < 3+32+8 || v[0] != cachedResponse || v[1] != 1 {
		return rec, errBadCached
	}
	switch v[2] {
	case 'C':
		rec.State = string(StateCompleted)
	case 'F':
		rec.State = string(StateFailedReplayable)
	default:
		return rec, errBadCached
	}
	rec.SameKey, rec.SameRequest = true, bytes.Equal(v[3:35], fp)
	rec.CompletedAt = pgtype.Timestamptz{Time: time.UnixMicro(int64(binary.BigEndian.Uint64(v[35:43]))).UTC(), Valid: true}
	rest := v[43:]
	status, n := binary.Uvarint(rest)
	if n <= 0 || status > 999 {
		return rec, errBadCached
	}
	rec.ResponseStatus, rest = int32(status), rest[n:]
	field := func() ([]byte, bool) {
		l, n := binary.Uvarint(rest)
		if n <= 0 || uint64(len(rest)-n) < l {
			return nil, false
		}
		f := rest[n : n+int(l)]
		rest = rest[n+int(l):]
		return f, true
	}
	schema, ok1 := field()
	headers, ok2 := field()
	if !ok1 || !ok2 {
		return rec, errBadCached
	}
	rec.SchemaVersion, rec.ResponseHeaders, rec.ResponseBody = string(schema), headers, rest
	if !rec.SameRequest {
		// A conflict: the stored response is not to be read.
		rec.ResponseStatus, rec.ResponseHeaders, rec.ResponseBody = 0, nil, nil
	}
	return rec, nil
}

// cacheKey is the key of rq's record in the cache: all of SHA-256(tenant
// NUL operation NUL key), so that no two keys share an entry.
func cacheKey(k Key) string {
	sum := k.sum()
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// cacheLookup asks the cache about rq before PostgreSQL. answered: the
// request was served from it. Otherwise rq.skipRead says whether the
// cache had nothing at all (the mode may skip the replay read: a first
// execution, most likely), and PostgreSQL decides as without a cache.
func (e *Engine) cacheLookup(rq *request) (answered bool, err error) {
	c := e.cfg.Cache
	ctx := rq.r.Context()
	rq.cacheKey = cacheKey(rq.key)
	marker := make([]byte, 9)
	marker[0] = cachedMarker
	_, _ = rand.Read(marker[1:])
	v, marked, err := c.Lookup(ctx, rq.cacheKey, marker, markerTTL)
	switch {
	case err != nil:
		// PostgreSQL decides, as without a cache.
		e.cacheFailed(ctx, rq, err)
		return false, nil
	case marked:
		rq.cache, rq.marker, rq.skipRead = CacheMiss, marker, true
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
			rq.cache = CacheMiss
			return false, nil
		}
	}
	rec, err := decodeCached(v, rq.fp)
	if err != nil {
		e.cacheFailed(ctx, rq, err)
		return false, nil
	}
	switch act, aerr := e.classify(rq, &rec); act {
	case actReplay:
		rq.cache = CacheHit
		return true, e.replay(rq, &rec)
	case actError:
		rq.cache = CacheHit
		return true, aerr
	}
	e.cacheFailed(ctx, rq, errBadCached)
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
	wait := e.cfg.LockTimeout
	if rq.op.Policy.InFlight == InFlightWait {
		wait = rq.op.Policy.Wait
	}
	deadline := time.Now().Add(wait)
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
		v, err := e.cfg.Cache.Get(ctx, rq.cacheKey)
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
	rq.cache = CacheFallback
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
	out, key, marker, op := rq.committed, rq.cacheKey, rq.marker, rq.op
	if rq.cache == CacheHit {
		out = nil // it came from the cache
	}
	if out == nil && marker == nil {
		return
	}
	ttl := e.cfg.CacheTTL
	if out != nil {
		ttl = min(ttl, out.left-time.Since(out.leftAt)-cacheMargin)
	}
	ctx := context.WithoutCancel(rq.r.Context())
	go func() {
		var err error
		switch {
		case out != nil && ttl > 0:
			err = e.cfg.Cache.Set(ctx, key, encodeCached(out), ttl)
		case marker != nil:
			err = e.cfg.Cache.Release(ctx, key, marker)
		}
		if err != nil {
			e.reportCacheError(ctx, op, err)
		}
	}()
}
