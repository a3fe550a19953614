// Command benchserver is the service benchload measures: the generated
// server of ../../openapi.yaml, whose three operations do the same business
// write (insert one payment row in a transaction) — without idempotency, in
// atomic mode and in lease mode.
//
// It reads DATABASE_URL, ADDR, FIBER_ADDR (where the Fiber peer listens;
// none when empty), POOL_SIZE and PPROF (non-empty: serve net/http/pprof
// under /debug/pprof/), applies the runtime's migrations and its own
// tables, and serves until SIGINT or SIGTERM. It also serves the peers
// (peers.go): POST /naive here, POST /fiber on FIBER_ADDR. With REDIS_URL
// set, the same operations are served under /redis/ too, by an engine with
// the Redis fast path (idem.Config.Cache, runtime/idemredis), and the
// naive middleware with a Redis lookup of its own under /naive/redis.
// GET /_stats reports the process's allocation count, so the load tool can
// attribute allocations per request to the server alone, how often each
// operation's handler ran, and how often a request waited for a pooled
// connection (and how long, in all).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/idemgen/idemgen/bench/api"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemredis"
)

const benchSchema = `CREATE TABLE IF NOT EXISTS bench_payments (
    id              bigserial PRIMARY KEY,
    idempotency_key text,
    amount          bigint NOT NULL,
    currency        text NOT NULL,
    reference       text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now())`

const insert = `INSERT INTO bench_payments (idempotency_key, amount, currency, reference)
VALUES ($1, $2, $3, $4) RETURNING id`

// invocations counts the runs of each operation's business handler.
var invocations = map[string]*atomic.Int64{
	"baseline": new(atomic.Int64), "atomic": new(atomic.Int64), "lease": new(atomic.Int64),
	"handwritten": new(atomic.Int64), "naive": new(atomic.Int64), "fiber": new(atomic.Int64),
}

// cacheResults counts the Redis engine's requests by what the cache did.
var cacheResults = map[idem.CacheResult]*atomic.Int64{
	idem.CacheHit: new(atomic.Int64), idem.CacheMiss: new(atomic.Int64), idem.CacheFallback: new(atomic.Int64),
	idem.CacheInvalid: new(atomic.Int64),
}

type service struct{ pool *pgxpool.Pool }

var _ api.Server = service{}

// write is the business write every operation shares.
func write(ctx context.Context, tx pgx.Tx, in api.PaymentInput) (api.Payment, error) {
	var key *string
	if k, ok := idem.KeyFromContext(ctx); ok {
		key = &k.Value
	}
	p := api.Payment{Amount: in.Amount, Currency: in.Currency, Reference: in.Reference}
	err := tx.QueryRow(ctx, insert, key, in.Amount, in.Currency, in.Reference).Scan(&p.ID)
	return p, err
}

// CreateBaseline runs the business transaction with no idempotency layer.
func (s service) CreateBaseline(ctx context.Context, req api.CreateBaselineRequest) (api.CreateBaselineResponse, error) {
	invocations["baseline"].Add(1)
	var p api.Payment
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		p, err = write(ctx, tx, req.Body)
		return err
	})
	if err != nil {
		return nil, err
	}
	return api.CreateBaseline201Response{Body: p}, nil
}

func (s service) CreateAtomic(ctx context.Context, tx pgx.Tx, req api.CreateAtomicRequest) (api.CreateAtomicResponse, error) {
	invocations["atomic"].Add(1)
	p, err := write(ctx, tx, req.Body)
	if err != nil {
		return nil, err
	}
	return api.CreateAtomic201Response{Body: p}, nil
}

func (s service) CreateLease(ctx context.Context, tx pgx.Tx, req api.CreateLeaseRequest) (api.CreateLeaseResponse, error) {
	invocations["lease"].Add(1)
	p, err := write(ctx, tx, req.Body)
	if err != nil {
		return nil, err
	}
	return api.CreateLease201Response{Body: p}, nil
}

func main() {
	if err := run(); err != nil {
		log.Fatalf("benchserver: %v", err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if n, err := strconv.Atoi(os.Getenv("POOL_SIZE")); err == nil && n > 0 {
		cfg.MaxConns = int32(n)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := setup(ctx, pool); err != nil {
		return err
	}
	// The engine logs one line per request at Info; the baseline and the
	// peers log nothing, so the engines here log from Warn up, like a
	// service with an access log of its own (LOG_REQUESTS=1: every line).
	level := slog.LevelWarn
	if os.Getenv("LOG_REQUESTS") != "" {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	mux, closeMux, err := newMux(pool, logger, os.Getenv("REDIS_URL"))
	if err != nil {
		return err
	}
	defer closeMux()
	mux.HandleFunc("GET /_stats", func(w http.ResponseWriter, r *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		inv := map[string]int64{}
		for k, v := range invocations {
			inv[k] = v.Load()
		}
		w.Header().Set("Content-Type", "application/json")
		cr := map[string]int64{}
		for k, v := range cacheResults {
			cr[string(k)] = v.Load()
		}
		ps := pool.Stat()
		pst := map[string]int64{"acquires": ps.AcquireCount(), "empty_acquires": ps.EmptyAcquireCount(),
			"acquire_wait_us": ps.EmptyAcquireWaitTime().Microseconds()}
		for k, v := range cacheErrors {
			cr["error: "+k] = v.Load()
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Mallocs": m.Mallocs, "Invocations": inv, "Cache": cr, "Pool": pst})
	})
	if fa := os.Getenv("FIBER_ADDR"); fa != "" {
		stopFiber, err := startFiber(pool, fa)
		if err != nil {
			return fmt.Errorf("fiber: %w", err)
		}
		defer stopFiber()
	}
	if os.Getenv("PPROF") != "" {
		// Profiling for benchload -profile; off by default.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// setup applies the runtime's migrations and creates benchserver's tables.
func setup(ctx context.Context, pool *pgxpool.Pool) error {
	if err := schema.Migrate(ctx, pool); err != nil {
		return err
	}
	for _, ddl := range []string{benchSchema, naiveSchema} {
		if _, err := pool.Exec(ctx, ddl); err != nil {
			return err
		}
	}
	return nil
}

// newMux serves the variants benchload measures on one ServeMux: the
// generated server's operations (idemgen's plain path, atomic and lease),
// the hand-written variant, the naive middleware and, with redisURL, the
// operations again under /redis/ through an engine with the Redis fast path.
// closeAll closes the Redis client.
func newMux(pool *pgxpool.Pool, logger *slog.Logger, redisURL string) (mux *http.ServeMux, closeAll func(), err error) {
	engine, err := idem.New(pool, idem.Config{Operations: api.IdempotentOperations, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	mux = http.NewServeMux()
	// Each operation's route here, not "/": a request of every variant
	// then costs this mux one exact match, as the hand-written one's does.
	gen := api.NewHandler(service{pool: pool}, engine)
	for _, rt := range api.Routes(service{}, nil) {
		mux.Handle(rt.Method+" "+rt.Pattern, gen)
	}
	mux.HandleFunc("POST /handwritten", handwritten(poolWrite(pool)))
	mux.HandleFunc("POST /naive", naive(pool))
	closeAll = func() {}
	if redisURL == "" {
		return mux, closeAll, nil
	}
	// Timeout: a cache call that takes longer falls back to PostgreSQL;
	// REDIS_TIMEOUT sets it (default: the runtime's).
	var timeout time.Duration
	if t := os.Getenv("REDIS_TIMEOUT"); t != "" {
		if timeout, err = time.ParseDuration(t); err != nil {
			return nil, nil, fmt.Errorf("REDIS_TIMEOUT: %w", err)
		}
	}
	cache, err := idemredis.New(redisURL, idemredis.Options{Prefix: "bench:", Timeout: timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	cached, err := idem.New(pool, idem.Config{Operations: api.IdempotentOperations, Cache: countingCache{cache}, Logger: logger,
		Hooks: idem.Hooks{OnOutcome: func(_ context.Context, _ *idem.Operation, o idem.Outcome) {
			if c := cacheResults[o.Cache]; c != nil {
				c.Add(1)
			}
		}}})
	if err != nil {
		cache.Close()
		return nil, nil, err
	}
	// Routed as the engine without a cache is (no http.StripPrefix, whose
	// copy of the request would count against the cache).
	red := api.NewHandler(service{pool: pool}, cached, api.WithBasePath("/redis"))
	for _, rt := range api.Routes(service{}, nil, api.WithBasePath("/redis")) {
		mux.Handle(rt.Method+" "+rt.Pattern, red)
	}
	// The naive middleware's own client, as its author would make it.
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		cache.Close()
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.DisableCache = true
	client, err := rueidis.NewClient(opt)
	if err != nil {
		cache.Close()
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	mux.HandleFunc("POST /naive/redis", naiveRedis(pool, client))
	return mux, func() { client.Close(); cache.Close() }, nil
}

// cacheErrors counts the Redis engine's failed cache calls by kind.
var cacheErrors = map[string]*atomic.Int64{
	"timeout": new(atomic.Int64), "unavailable": new(atomic.Int64), "other": new(atomic.Int64),
}

// countingCache counts its cache's errors in cacheErrors.
type countingCache struct{ *idemredis.Cache }

func countError(err error) error {
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		cacheErrors["timeout"].Add(1)
	case errors.Is(err, idemredis.ErrUnavailable):
		cacheErrors["unavailable"].Add(1)
	default:
		cacheErrors["other"].Add(1)
	}
	return err
}

func (c countingCache) Lookup(ctx context.Context, key string, marker []byte, ttl time.Duration) ([]byte, bool, error) {
	v, marked, err := c.Cache.Lookup(ctx, key, marker, ttl)
	return v, marked, countError(err)
}

func (c countingCache) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := c.Cache.Get(ctx, key)
	return v, countError(err)
}

func (c countingCache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return countError(c.Cache.Set(ctx, key, value, ttl))
}

func (c countingCache) Release(ctx context.Context, key string, marker []byte) error {
	return countError(c.Cache.Release(ctx, key, marker))
}
