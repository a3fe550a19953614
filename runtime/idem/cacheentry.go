package idem

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// What binds a cache entry to its record and its database, so that the
// cache can lose or withhold an outcome but never make the engine replay
// one PostgreSQL did not commit for the request's key.
//
// Each database holds a random secret (idem_cache_secret, made by
// migration 0006). The engine reads it once and derives, with the
// database's system identifier and name, a MAC key and a tag. The tag
// names the database: it begins every cache key (the namespace: two
// databases sharing one cache never use one key) and every entry. An
// entry also names its record (SHA-256 of tenant, operation and key) and
// ends with an HMAC-SHA256 of all it holds. An entry written for another
// database or another key, edited, truncated, forged, or of an unknown
// format is not an answer: the request goes to PostgreSQL as after a
// miss, and it is counted (CacheInvalid, ErrCacheEntryRejected).

// ErrCacheEntryRejected is wrapped by the error a CacheObserver is given
// when Config.Cache held an entry under a request's key that is not that
// key's committed outcome in this database: written for another database
// or another key, altered, or not written by the engine at all. The
// request was served from PostgreSQL, as after a miss (Outcome.Cache is
// CacheInvalid). One now and then is a cache that lost or mangled data;
// many are someone writing to the cache, or two deployments sharing a
// database secret (docs/security.md).
var ErrCacheEntryRejected = errors.New("idem: cache: entry rejected")

var (
	errEntryFormat   = fmt.Errorf("%w: not an entry in the engine's format", ErrCacheEntryRejected)
	errEntryForeign  = fmt.Errorf("%w: written for another database", ErrCacheEntryRejected)
	errEntryOtherKey = fmt.Errorf("%w: written for another tenant, operation or key", ErrCacheEntryRejected)
	errEntryMAC      = fmt.Errorf("%w: its MAC does not verify (edited, truncated or forged)", ErrCacheEntryRejected)
	// errEntryOld is an entry an engine before format 2 wrote: a miss,
	// never counted as rejected.
	errEntryOld = errors.New("idem: cache: an entry of format 1")
)

// The entry format (cachedResponse, then entryVersion):
//
//	'R' 2 | tag (12) | record sum (32) | state 'C' or 'F' | fingerprint (32)
//	| completed at (Unix µs, 8) | status, len(schema), schema, len(headers),
//	headers (uvarint-prefixed) | body | HMAC-SHA256 of all before it (32)
//
// The response (status, headers, body) is held as the record stores it:
// sealed when there is a Sealer.
const (
	entryVersion = 2
	tagSize      = 12
	entryHead    = 2 + tagSize + sha256.Size // up to the state
	entryFixed   = entryHead + 1 + sha256.Size + 8
	entryMin     = entryFixed + 3 + sha256.Size
)

// cacheIdentity is what the engine's entries are bound to: one database.
type cacheIdentity struct {
	tag  [tagSize]byte
	ns   string // base64url(tag): the namespace every cache key starts with
	macs sync.Pool
}

// newCacheIdentity derives the MAC key and the tag of a database from its
// cache secret, its system identifier and its name.
func newCacheIdentity(secret []byte, system, database string) *cacheIdentity {
	d := hmac.New(sha256.New, secret)
	d.Write([]byte("idemgen cache v2\x00"))
	d.Write([]byte(system))
	d.Write([]byte{0})
	d.Write([]byte(database))
	key := d.Sum(nil)
	id := &cacheIdentity{}
	id.macs.New = func() any { return hmac.New(sha256.New, key) }
	t := hmac.New(sha256.New, key)
	t.Write([]byte("namespace"))
	copy(id.tag[:], t.Sum(nil))
	id.ns = base64.RawURLEncoding.EncodeToString(id.tag[:])
	return id
}

// record is what an entry of k's record is bound to, its sum
// (SHA-256(tenant NUL operation NUL key)), and its key in the cache: the
// database's namespace and base64url(sum). The one place both are made.
func (id *cacheIdentity) record(k Key) (sum [sha256.Size]byte, key string) {
	sum = k.sum()
	return sum, id.ns + ":" + base64.RawURLEncoding.EncodeToString(sum[:])
}

func (id *cacheIdentity) mac(b []byte) []byte {
	h := id.macs.Get().(hash.Hash)
	h.Reset()
	h.Write(b)
	m := h.Sum(nil)
	id.macs.Put(h)
	return m
}

// seal is the entry of c, the committed outcome of the record sum names.
func (id *cacheIdentity) seal(c *cached, sum *[sha256.Size]byte) []byte {
	b := make([]byte, 0, entryMin+16+len(c.schema)+len(c.headers)+len(c.body))
	b = append(b, cachedResponse, entryVersion)
	b = append(b, id.tag[:]...)
	b = append(b, sum[:]...)
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
	b = append(b, c.body...)
	return append(b, id.mac(b)...)
}

// open reads v as the record row replay and classify read, if it is the
// entry this database's engine wrote for the record sum names; fp is the
// request's fingerprint.
func (id *cacheIdentity) open(v []byte, sum *[sha256.Size]byte, fp []byte) (record, error) {
	var rec record
	switch {
	case len(v) < 2 || v[0] != cachedResponse:
		return rec, errEntryFormat
	case v[1] == 1:
		return rec, errEntryOld
	case v[1] != entryVersion || len(v) < entryMin:
		return rec, errEntryFormat
	case !bytes.Equal(v[2:2+tagSize], id.tag[:]):
		return rec, errEntryForeign
	case !bytes.Equal(v[2+tagSize:entryHead], sum[:]):
		return rec, errEntryOtherKey
	}
	signed := v[:len(v)-sha256.Size]
	if !hmac.Equal(id.mac(signed), v[len(signed):]) {
		return rec, errEntryMAC
	}
	// From here on the engine wrote it: a malformed field is its own bug,
	// still not an answer.
	switch signed[entryHead] {
	case 'C':
		rec.state = StateCompleted
	case 'F':
		rec.state = StateFailedReplayable
	default:
		return rec, errEntryFormat
	}
	rec.sameKey, rec.sameRequest = true, bytes.Equal(signed[entryHead+1:entryHead+1+sha256.Size], fp)
	at := int64(binary.BigEndian.Uint64(signed[entryFixed-8 : entryFixed]))
	rec.completedAt = time.UnixMicro(at).UTC()
	rest := signed[entryFixed:]
	status, n := binary.Uvarint(rest)
	if n <= 0 || status > 999 {
		return rec, errEntryFormat
	}
	rec.status, rest = int32(status), rest[n:]
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
		return rec, errEntryFormat
	}
	rec.schema, rec.headers, rec.body = string(schema), headers, rest
	if !rec.sameRequest {
		// A conflict: the stored response is not to be read.
		rec.status, rec.headers, rec.body = 0, nil, nil
	}
	return rec, nil
}

// CacheKey returns the key under which Config.Cache holds the outcome of
// k (its Tenant, Operation and Value), for an operator who looks at or
// evicts one entry: runtime/idemredis puts its Options.Prefix before it.
// It reads the database's identity when the engine has not yet (with
// Config.Shard, that of k.Tenant's database). Without a cache it is an
// error.
func (e *Engine) CacheKey(ctx context.Context, k Key) (string, error) {
	if e.cfg.Cache == nil {
		return "", errors.New("idem: CacheKey: the engine has no Config.Cache")
	}
	s, err := e.engineFor(ctx, k.Tenant)
	if err != nil {
		return "", err
	}
	id, err := s.cacheIdentity(ctx)
	if err != nil {
		return "", err
	}
	_, key := id.record(k)
	return key, nil
}

// cacheIdent is an engine's cacheIdentity, read from its database on
// first need (New, else the first request that asks the cache). The zero
// value has read nothing yet.
type cacheIdent struct {
	id   atomic.Pointer[cacheIdentity]
	mu   sync.Mutex
	next time.Time // no new attempt before
	err  error     // the last attempt's
}

// cacheIdentityRetry spaces the attempts to read a database's identity
// after one failed.
const cacheIdentityRetry = time.Second

// errIdentityBusy: another request is reading the identity now.
var errIdentityBusy = errors.New("idem: cache: the database's identity is being read")

// cacheIdentity returns e's database's identity, reading it when it has
// not been read yet. Until it has been, requests go without the cache:
// only one at a time tries, at most once per cacheIdentityRetry.
func (e *Engine) cacheIdentity(ctx context.Context) (*cacheIdentity, error) {
	if id := e.cacheID.id.Load(); id != nil {
		return id, nil
	}
	c := &e.cacheID
	if !c.mu.TryLock() {
		return nil, errIdentityBusy
	}
	defer c.mu.Unlock()
	if id := c.id.Load(); id != nil {
		return id, nil
	}
	if time.Now().Before(c.next) {
		return nil, c.err
	}
	id, err := readCacheIdentity(ctx, e.db)
	if err != nil {
		c.next, c.err = time.Now().Add(cacheIdentityRetry), err
		return nil, err
	}
	c.id.Store(id)
	return id, nil
}

// readCacheIdentity reads db's cache secret, name and system identifier.
// The system identifier tells apart databases restored from one backup
// into different clusters; a server that does not show it (not
// PostgreSQL, or a managed service that hides pg_control_system) goes
// without.
func readCacheIdentity(ctx context.Context, db DB) (*cacheIdentity, error) {
	var secret []byte
	var name string
	if err := db.QueryRow(ctx, "SELECT secret, current_database() FROM idem_cache_secret").Scan(&secret, &name); err != nil {
		return nil, fmt.Errorf("idem: cache: read the database's cache secret (idem_cache_secret): %w", err)
	}
	var system string
	if err := db.QueryRow(ctx, "SELECT system_identifier::text FROM pg_control_system()").Scan(&system); err != nil {
		system = ""
	}
	return newCacheIdentity(secret, system, name), nil
}

// prepareCache reads the cache identity of New's database at start-up. A
// database without idem_cache_secret is a schema error (migration 0006 is
// missing); one that cannot be asked now is logged, and the requests try
// again.
func (e *Engine) prepareCache() error {
	if e.cfg.Cache == nil || e.db == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), schemaCheckTimeout)
	defer cancel()
	_, err := e.cacheIdentity(ctx)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table
		return fmt.Errorf("%w: Config.Cache needs the table idem_cache_secret (migration 0006), which is missing: %w", ErrSchemaMissing, err)
	}
	e.logger().Warn("idem: the cache is not used until the database's identity can be read", "error", err)
	return nil
}
