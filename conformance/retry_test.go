package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

const ordersSpec = `openapi: 3.0.3
info: {title: orders, version: "1"}
x-idempotent: {}
components:
  schemas:
    Order: {type: object, required: [id, item, qty], properties: {id: {type: integer}, item: {type: string}, qty: {type: integer}}}
paths:
  /orders:
    get:
      operationId: listOrders
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: array, items: {$ref: '#/components/schemas/Order'}}}}}
    post:
      operationId: createOrder
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [item, qty], properties: {item: {type: string}, qty: {type: integer, minimum: 1}}}
      responses:
        "201": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}
  /orders/{orderId}/notes:
    post:
      operationId: addNote
      parameters: [{name: orderId, in: path, required: true, schema: {type: integer}}]
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [text, pages], properties: {text: {type: string}, pages: {type: integer, minimum: 1}}}
      responses:
        "201": {description: ok, content: {application/json: {schema: {type: object}}}}
`

// ordersServer is a real idempotent service over a real PostgreSQL: the
// engine (runtime/idem) in front of two hand-written operations, and a GET
// that lists the orders for the checks' effect counts.
func ordersServer(t *testing.T) http.Handler {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{Migrations: fstest.MapFS{
		"0001_orders.up.sql": {Data: []byte(`CREATE TABLE orders (id bigserial PRIMARY KEY, item text NOT NULL, qty int NOT NULL);
CREATE TABLE notes (id bigserial PRIMARY KEY, order_id bigint NOT NULL REFERENCES orders, text text NOT NULL, pages int NOT NULL);`)},
	}})
	create := &idem.Operation{ID: "createOrder", Method: "POST", Pattern: "/orders", Policy: idem.DefaultPolicy()}
	note := &idem.Operation{ID: "addNote", Method: "POST", Pattern: "/orders/{orderId}/notes", Policy: idem.DefaultPolicy()}
	eng, err := idem.New(db.Pool, idem.Config{Operations: []*idem.Operation{create, note},
		Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
	if err != nil {
		t.Fatal(err)
	}
	created := func(v any) (*idem.Response, error) {
		out, err := json.Marshal(v)
		return &idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: out}, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		rows, _ := db.Query(r.Context(), `SELECT id, item, qty FROM orders ORDER BY id`)
		type order struct {
			ID   int64  `json:"id"`
			Item string `json:"item"`
			Qty  int    `json:"qty"`
		}
		list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[order])
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(append([]order{}, list...))
	})
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, create, func(body []byte) (idem.Prepared, error) {
			var req struct {
				Item string `json:"item"`
				Qty  int    `json:"qty"`
			}
			if err := json.Unmarshal(body, &req); err != nil || req.Qty < 1 {
				return idem.Prepared{}, idem.InvalidRequest("body", errors.New("want an item and a qty of at least 1"))
			}
			canonical, _ := json.Marshal(req) // members in one order: a reordered body is the same request
			return idem.Prepared{Canonical: canonical, Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO orders (item, qty) VALUES ($1, $2) RETURNING id`, req.Item, req.Qty).Scan(&id); err != nil {
					return nil, err
				}
				return created(map[string]any{"id": id, "item": req.Item, "qty": req.Qty})
			}}, nil
		})
	})
	mux.HandleFunc("POST /orders/{orderId}/notes", func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, note, func(body []byte) (idem.Prepared, error) {
			var req struct {
				OrderID string `json:"orderId"`
				Text    string `json:"text"`
				Pages   int    `json:"pages"`
			}
			if err := json.Unmarshal(body, &req); err != nil || req.Pages < 1 {
				return idem.Prepared{}, idem.InvalidRequest("body", errors.New("want a text and pages of at least 1"))
			}
			req.OrderID = r.PathValue("orderId")
			canonical, _ := json.Marshal(req)
			return idem.Prepared{Canonical: canonical, Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				var id int64
				err := tx.QueryRow(ctx, `INSERT INTO notes (order_id, text, pages) VALUES ($1, $2, $3) RETURNING id`, req.OrderID, req.Text, req.Pages).Scan(&id)
				if err != nil {
					return nil, err
				}
				return created(map[string]any{"id": id, "orderId": req.OrderID, "text": req.Text, "pages": req.Pages})
			}}, nil
		})
	})
	return mux
}

// retryableFirst answers the first two requests of every key (by the key
// header as sent) as the contract lets a busy service answer, without
// passing them on: 503 IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN (an attempt
// whose fate its server could not record), then 409 IDEMPOTENCY_LEASE_LOST
// (another attempt took the key over), each with Retry-After: 0. The third
// goes to next. It counts what it refused.
type retryableFirst struct {
	next    http.Handler
	mu      sync.Mutex
	seen    map[string]int
	refused int
}

func (f *retryableFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.Join(r.Header.Values("Idempotency-Key"), ", ")
	f.mu.Lock()
	n := f.seen[key] + 1
	f.seen[key] = n
	refuse := key != "" && n <= 2
	if refuse {
		f.refused++
	}
	f.mu.Unlock()
	if !refuse {
		f.next.ServeHTTP(w, r)
		return
	}
	err := idem.ErrOutcomeUnknown
	if n == 2 {
		err = idem.ErrLeaseLost
	}
	w.Header().Set("Retry-After", "0")
	(*idem.Engine)(nil).WriteError(w, r, idem.ProfileDefault, err)
}

// TestRetryableAnswersAreRetried: a service that answers every key's first
// two requests 503 IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN and 409
// IDEMPOTENCY_LEASE_LOST, as a busy one may, conforms: the checker
// retries them with the same key and body, as a client keeping the
// contract does, and judges the third answer, saying so in the evidence;
// the parent order a note's path names is created the same way, and the
// concurrent check's burst retries its 503.
func TestRetryableAnswersAreRetried(t *testing.T) {
	f := &retryableFirst{next: ordersServer(t), seen: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	rep, err := Run(t.Context(), Config{Spec: "openapi.yaml", SpecData: []byte(ordersSpec), URL: srv.URL, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = rep.WriteText(&b)
	t.Logf("conformance report:\n%s", b.String())
	for _, op := range []string{"createOrder", "addNote"} {
		for _, check := range []string{"missing-key", "malformed-key/format", "first-execution", "key-echo", "content-digest",
			"replay", "replay/last-modified", "replay/canonical-json", "conflict", "quoted-key", "concurrent"} {
			if res := rep.Find(op, check); res == nil || res.Outcome != Pass {
				t.Errorf("%s %s: %+v, want PASS", op, check, res)
			}
		}
		res := rep.Find(op, "first-execution")
		if res == nil || !strings.Contains(res.Evidence, "after 3 attempts") || !strings.Contains(res.Evidence, "lists 1 new item") && op == "createOrder" {
			t.Errorf("%s first-execution: the evidence does not say 3 attempts and one effect: %+v", op, res)
			continue
		}
		if ex := res.Exchanges[0]; len(ex.Earlier) != 2 || ex.Earlier[0].Status != 503 || ex.Earlier[1].Status != 409 {
			t.Errorf("%s first-execution: earlier answers %+v, want the 503 and the 409", op, ex.Earlier)
		}
	}
	if f.refused == 0 {
		t.Error("the server refused nothing")
	}
}
