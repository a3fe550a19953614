package idem_test

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
)

// ordersMigrations holds the service's own tables.
//
//go:embed testdata/orders/*.up.sql
var ordersMigrations embed.FS

// createOrder is a hand-written idempotent operation: what idemgen would
// otherwise generate from an OpenAPI document.
var createOrder = &idem.Operation{
	ID:      "createOrder",
	Method:  "POST",
	Pattern: "/orders",
	Policy: func() idem.Policy {
		p := idem.DefaultPolicy()
		p.ReplayStatuses = []int{409} // "out of stock" is a final answer
		p.SchemaVersion = "1"
		return p
	}(),
}

type orderRequest struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

// ordersHandler serves POST /orders through the engine: prepare decodes and
// validates the body, and the returned handler writes through tx, the
// transaction that also stores the idempotency record.
func ordersHandler(eng *idem.Engine) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, createOrder, func(body []byte) (idem.Prepared, error) {
			var req orderRequest
			if err := json.Unmarshal(body, &req); err != nil {
				return idem.Prepared{}, idem.InvalidRequest("body", err)
			}
			if req.Qty <= 0 {
				return idem.Prepared{}, idem.InvalidRequest("body: qty", errors.New("must be positive"))
			}
			// No Canonical: the engine fingerprints the raw request, which
			// is all this handler reads (Prepared.Canonical).
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				var id int64
				err := tx.QueryRow(ctx, `INSERT INTO orders (item, qty) VALUES ($1, $2) RETURNING id`,
					req.Item, req.Qty).Scan(&id)
				if err != nil {
					return nil, err // rolled back; the key stays retryable
				}
				out, _ := json.Marshal(map[string]any{"id": id, "item": req.Item, "qty": req.Qty})
				return &idem.Response{
					Status: http.StatusCreated,
					Header: http.Header{"Content-Type": {"application/json"}},
					Body:   out,
				}, nil
			}}, nil
		})
	})
	return mux
}

// Example_handwritten wires the engine by hand: migrations, an engine that
// validates its operations at start-up, a sweeper, and a handler. (The same
// code runs against PostgreSQL in TestHandwrittenExample.)
func Example_handwritten() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := idem.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	if err := idem.MigrateFS(ctx, pool, ordersMigrations, "orders_migrations"); err != nil {
		log.Fatal(err)
	}
	eng, err := idem.New(pool, idem.Config{Operations: []*idem.Operation{createOrder}})
	if err != nil {
		log.Fatal(err) // e.g. a ttl outside 2h..24h
	}
	go admin.NewSweeper(pool, admin.SweeperConfig{}).Run(ctx)
	log.Fatal(http.ListenAndServe("localhost:8080", ordersHandler(eng)))
}
