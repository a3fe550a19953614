// Package idemredis is the idempotency engine's Redis fast path: an
// idem.Cache over Redis 7 or later, through github.com/redis/rueidis.
//
//	cache, err := idemredis.New("redis://127.0.0.1:6379/0", idemredis.Options{})
//	if err != nil {
//		return err // a malformed URL; the server itself is reached lazily
//	}
//	defer cache.Close()
//	engine, _ := idem.New(pool, idem.Config{Cache: cache, Operations: api.IdempotentOperations})
//
// With it, a replay is one Redis round trip instead of a PostgreSQL read,
// a first execution skips the read before its transaction, and duplicates
// of a request in flight wait on a marker instead of reaching the
// database. PostgreSQL stays the authority (see idem.Cache): Redis may be
// down, slow, flushed or restarted at any moment and the engine serves
// from PostgreSQL, answering exactly what it would have answered without
// Redis.
//
// Nor can Redis lie to the engine. Every entry names its database and
// its record (tenant, operation, key) and carries an HMAC-SHA256 under a
// key derived from a secret the database holds (migration 0006): an entry
// copied from another key, tenant or database, edited, truncated or
// written by anyone else is a miss, counted as idem.CacheInvalid, never a
// replay, a 409 or a 500. What a Redis in the wrong hands can do is deny
// service: drop or withhold outcomes (the requests go to PostgreSQL) and
// hold duplicates back for their wait with markers. FLUSHALL is always
// safe. See docs/security.md.
//
// Every key the engine uses is Options.Prefix ("idem:"), the namespace of
// its database (16 characters derived from the same secret), ':' and the
// record's hash: services on different databases sharing one Redis with
// the default options never touch each other's keys, and
// `SCAN 0 MATCH idem:<namespace>:*` lists one database's entries
// (Engine.CacheKey names one record's).
//
// What this package adds to the client is what keeps a sick Redis from
// slowing every request: each call is bounded by Options.Timeout, and
// after Options.Failures calls in a row have failed, calls fail at once
// (ErrUnavailable) for Options.Cooldown before Redis is tried again. The
// engine counts those as fallbacks (idem.Outcome.Cache). The first
// failure is logged once, at Warn, to Options.Logger, and the first
// success after it at Info: a wrong URL or a dead Redis does not go
// unseen, and a Redis that comes and goes does not fill the log.
//
// Why rueidis rather than go-redis: it pipelines the commands of
// concurrent requests onto shared connections by itself. On two cores,
// 32 goroutines doing the engine's SET NX GET ran at 19 000–24 000
// commands/s with 15–17 µs of client CPU each, against 5 000–9 000 and
// 44–71 µs through a go-redis pool (docs/design.md).
//
// The package lives apart from runtime/idem so that services without Redis
// do not compile a Redis client.
package idemredis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Options tune a Cache. The zero value is usable.
type Options struct {
	// Prefix is put before every key the engine uses; "idem:" by default.
	// Services on different databases need none of their own to keep
	// apart (the engine's keys begin with their database's namespace); a
	// prefix serves to fence the engine's keys off from others' (Redis ACL
	// key patterns, a shared instance's conventions).
	Prefix string
	// Timeout bounds each call (the caller's deadline, if earlier, wins);
	// 25 ms by default. A call that times out is a fallback to PostgreSQL,
	// never an error the client sees.
	Timeout time.Duration
	// Failures is how many calls in a row must fail before calls fail at
	// once for Cooldown; 3 by default.
	Failures int
	// Cooldown is how long calls fail at once after Failures failures; 1 s
	// by default. The first call after it tries Redis again.
	Cooldown time.Duration
	// Logger gets one warning when calls start to fail (Redis unreachable,
	// refusing, timing out) and one line when they succeed again; give it
	// the engine's (idem.Config.Logger). A Redis that fails again within a
	// minute of the last warning is not reported again before that minute
	// is up. Nil means slog.Default().
	Logger *slog.Logger
}

// ErrUnavailable is returned while calls fail at once (Options.Failures
// calls in a row failed less than Options.Cooldown ago).
var ErrUnavailable = errors.New("idemredis: redis unavailable, not tried during the cool-down")

// Cache is an idem.Cache over Redis. It is safe for concurrent use.
type Cache struct {
	opts Options
	dial func() (rueidis.Client, error)

	mu      sync.Mutex
	client  rueidis.Client
	closed  bool
	dialing bool
	dialErr error

	failures  atomic.Int32
	openUntil atomic.Int64 // unix nanoseconds; calls fail at once before it
	health    health
}

var _ idem.Cache = (*Cache)(nil)

// New returns a Cache for the Redis at url (redis://[user:password@]host:port/db,
// rediss:// for TLS, as rueidis.ParseURL reads it). Only a malformed URL is
// an error: the connection is made on first use, and made again after
// Redis went away, so a service starts and serves while Redis is down.
func New(url string, opts Options) (*Cache, error) {
	co, err := rueidis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("idemredis: %w", err)
	}
	co.DisableCache = true // no client-side caching: every answer comes from the server
	if co.Dialer.Timeout == 0 {
		co.Dialer.Timeout = time.Second
	}
	return newCache(opts, func() (rueidis.Client, error) { return rueidis.NewClient(co) }), nil
}

// NewWithClient returns a Cache over a client the caller made (and closes:
// Close leaves it open).
func NewWithClient(client rueidis.Client, opts Options) *Cache {
	c := newCache(opts, nil)
	c.client = client
	return c
}

func newCache(opts Options, dial func() (rueidis.Client, error)) *Cache {
	if opts.Prefix == "" {
		opts.Prefix = "idem:"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 25 * time.Millisecond
	}
	if opts.Failures <= 0 {
		opts.Failures = 3
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Cache{opts: opts, dial: dial}
	c.health.log, c.health.every = opts.Logger, warnEvery
	return c
}

// Close closes the connections New made.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.client != nil && c.dial != nil {
		c.client.Close()
		c.client = nil
	}
}

// errConnecting is the error of calls made while the first connection
// (or a new one, after the first attempt failed) is being made.
var errConnecting = errors.New("connecting")

// conn returns the client. Without one it starts connecting in the
// background and fails the call at once: no request waits for a dial.
// Once made, the client reconnects by itself when Redis goes away.
func (c *Cache) conn() (rueidis.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, errors.New("closed")
	case c.client != nil:
		return c.client, nil
	case c.dialing:
		return nil, errConnecting
	}
	c.dialing = true
	go func() {
		cl, err := c.dial()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.dialing = false
		switch {
		case err != nil:
			c.dialErr = err
		case c.closed:
			cl.Close()
		default:
			c.client, c.dialErr = cl, nil
		}
	}()
	if c.dialErr != nil {
		return nil, fmt.Errorf("%w (last attempt: %w)", errConnecting, c.dialErr)
	}
	return nil, errConnecting
}

// call runs f with the client under the time bound and the circuit.
func (c *Cache) call(ctx context.Context, f func(ctx context.Context, cl rueidis.Client) error) error {
	if until := c.openUntil.Load(); until != 0 {
		now := time.Now().UnixNano()
		// After the cool-down one call tries Redis; the others keep
		// failing at once until it succeeds.
		if now < until || !c.openUntil.CompareAndSwap(until, now+int64(c.opts.Cooldown)) {
			c.health.skipped.Add(1)
			return ErrUnavailable
		}
	}
	cl, err := c.conn()
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		err = f(cctx, cl)
		cancel()
	}
	if err != nil {
		if ctx.Err() == nil {
			if int(c.failures.Add(1)) >= c.opts.Failures {
				c.openUntil.Store(time.Now().Add(c.opts.Cooldown).UnixNano())
			}
			// The first calls fail while the first connection is made:
			// not a fault, unless making it failed.
			if err != errConnecting {
				c.health.failed(err)
			}
		}
		return fmt.Errorf("idemredis: %w", err)
	}
	if c.failures.Load() != 0 || c.openUntil.Load() != 0 {
		c.failures.Store(0)
		c.openUntil.Store(0)
	}
	if c.health.down.Load() {
		c.health.recovered()
	}
	return nil
}

// Lookup is SET key marker NX PX ttl GET: the value key held, or, when it
// held none, the marker set (marked).
func (c *Cache) Lookup(ctx context.Context, key string, marker []byte, ttl time.Duration) (value []byte, marked bool, err error) {
	err = c.call(ctx, func(ctx context.Context, cl rueidis.Client) error {
		cmd := cl.B().Set().Key(c.opts.Prefix + key).Value(rueidis.BinaryString(marker)).Nx().Get().Px(ttl).Build()
		v, err := cl.Do(ctx, cmd).AsBytes()
		switch {
		case rueidis.IsRedisNil(err):
			marked = true
			return nil
		case err != nil:
			return err
		}
		value = v
		return nil
	})
	return value, marked, err
}

// Get is GET key.
func (c *Cache) Get(ctx context.Context, key string) (value []byte, err error) {
	err = c.call(ctx, func(ctx context.Context, cl rueidis.Client) error {
		v, err := cl.Do(ctx, cl.B().Get().Key(c.opts.Prefix+key).Build()).AsBytes()
		if rueidis.IsRedisNil(err) {
			return nil
		}
		value = v
		return err
	})
	return value, err
}

// Set is SET key value PX ttl.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return c.call(ctx, func(ctx context.Context, cl rueidis.Client) error {
		return cl.Do(ctx, cl.B().Set().Key(c.opts.Prefix+key).Value(rueidis.BinaryString(value)).Px(ttl).Build()).Error()
	})
}

// releaseScript deletes a key only while it holds the caller's marker.
var releaseScript = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// Release deletes key if it still holds marker (a Lua script, so a value
// set meanwhile stays).
func (c *Cache) Release(ctx context.Context, key string, marker []byte) error {
	return c.call(ctx, func(ctx context.Context, cl rueidis.Client) error {
		return releaseScript.Exec(ctx, cl, []string{c.opts.Prefix + key}, []string{string(marker)}).Error()
	})
}
