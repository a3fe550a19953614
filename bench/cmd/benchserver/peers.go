package main

// The peers: what a Go service might use instead of idemgen, serving the same
// business write. benchload measures them in the same run as idemgen.
//
//   - /naive (net/http, same port as idemgen): a hand-written middleware
//     that reads the key's stored response with a SELECT, runs the handler
//     in its own transaction when there is none, then stores the response
//     with an INSERT. No fingerprint, no claim.
//   - /naive/redis (with REDIS_URL): the same, with the stored response
//     looked up in Redis first (a GET; on a miss the SELECT, whose answer
//     is then SET). Their replays — the key's stored response written back,
//     with no fingerprint, no check of the body and no record state — are
//     the floor of any replay: benchload's naive-replay and
//     naive-replay-redis.
//   - /fiber (a Fiber v3 app on FIBER_ADDR): Fiber's middleware/idempotency
//     with gofiber/storage/postgres/v3 on the same pool: a per-process lock
//     on the key, the response stored after the handler.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/idempotency"
	"github.com/gofiber/storage/postgres/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/idemgen/idemgen/bench/api"
)

const naiveSchema = `CREATE TABLE IF NOT EXISTS naive_idempotency (
    key        text PRIMARY KEY,
    status     integer NOT NULL,
    body       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now())`

// peerWrite is the business write of the peers: the same transaction and
// INSERT as every idemgen operation.
func peerWrite(ctx context.Context, pool *pgxpool.Pool, key string, in api.PaymentInput) (api.Payment, error) {
	p := api.Payment{Amount: in.Amount, Currency: in.Currency, Reference: in.Reference}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, insert, key, in.Amount, in.Currency, in.Reference).Scan(&p.ID)
	})
	return p, err
}

func decodePayment(body []byte) (api.PaymentInput, error) {
	var in api.PaymentInput
	if err := json.Unmarshal(body, &in); err != nil {
		return in, err
	}
	if in.Amount < 1 || in.Currency == "" || in.Reference == "" {
		return in, errors.New("amount, currency and reference are required")
	}
	return in, nil
}

// naive is the SELECT-then-INSERT middleware around the business write.
func naive(pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			http.Error(w, "Idempotency-Key required", http.StatusBadRequest)
			return
		}
		var status int
		var stored []byte
		err := pool.QueryRow(ctx, "SELECT status, body FROM naive_idempotency WHERE key = $1", key).Scan(&status, &stored)
		if err == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(stored)
			return
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var in api.PaymentInput
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		invocations["naive"].Add(1)
		p, err := peerWrite(ctx, pool, key, in)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		body, _ := json.Marshal(p)
		if _, err := pool.Exec(ctx, `INSERT INTO naive_idempotency (key, status, body) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO NOTHING`, key, http.StatusCreated, body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}
}

// naiveRedis is naive with the stored response looked up in Redis first,
// as a service adding a cache by hand would: a hit is written back as it
// is; on a miss, a response the table holds is SET (for a day) and
// written, and a key the table does not hold goes to naive.
func naiveRedis(pool *pgxpool.Pool, client rueidis.Client) http.HandlerFunc {
	next := naive(pool)
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		key := r.Header.Get("Idempotency-Key")
		stored, err := client.Do(ctx, client.B().Get().Key("naive:"+key).Build()).AsBytes()
		if err == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(stored)
			return
		}
		if !rueidis.IsRedisNil(err) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var status int
		err = pool.QueryRow(ctx, "SELECT status, body FROM naive_idempotency WHERE key = $1", key).Scan(&status, &stored)
		if errors.Is(err, pgx.ErrNoRows) {
			next(w, r)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := client.Do(ctx, client.B().Set().Key("naive:"+key).Value(rueidis.BinaryString(stored)).Ex(24*time.Hour).Build()).Error(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(stored)
	}
}

// startFiber serves POST /fiber on addr: Fiber's idempotency middleware with
// its PostgreSQL storage. stop shuts it down.
func startFiber(pool *pgxpool.Pool, addr string) (stop func(), err error) {
	// The storage looks its table up in schema "public" unless the name
	// says otherwise: name the schema the pool's search_path puts first, or
	// a server given a schema of its own (search_path in DATABASE_URL)
	// panics on a fresh database ("table fiber_storage does not exist").
	var schema string
	if err := pool.QueryRow(context.Background(), "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, fmt.Errorf("current schema: %w", err)
	}
	app := fiber.New()
	app.Use(idempotency.New(idempotency.Config{
		KeyHeader:           "Idempotency-Key",
		Lifetime:            24 * time.Hour,
		KeepResponseHeaders: []string{"Content-Type"},
		Storage:             postgres.New(postgres.Config{DB: pool, Table: schema + ".fiber_storage"}),
	}))
	app.Post("/fiber", func(c fiber.Ctx) error {
		in, err := decodePayment(c.Body())
		if err != nil {
			return c.Status(http.StatusBadRequest).SendString(err.Error())
		}
		invocations["fiber"].Add(1)
		p, err := peerWrite(c, pool, c.Get("Idempotency-Key"), in)
		if err != nil {
			return err
		}
		return c.Status(http.StatusCreated).JSON(p)
	})
	errc := make(chan error, 1)
	go func() {
		errc <- app.Listen(addr, fiber.ListenConfig{DisableStartupMessage: true})
	}()
	select {
	case err := <-errc:
		return nil, err
	case <-time.After(100 * time.Millisecond):
	}
	return func() { _ = app.ShutdownWithTimeout(5 * time.Second) }, nil
}
