package idem_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
)

// TestHandwrittenExample runs Example_handwritten's service against a real
// PostgreSQL: migrations from scratch, a first execution, a replay.
func TestHandwrittenExample(t *testing.T) {
	t.Parallel()
	pool := emptySchema(t)
	ctx := context.Background()
	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := schema.MigrateFS(ctx, pool, ordersMigrations, "orders_migrations"); err != nil {
		t.Fatal(err)
	}
	eng, err := idem.New(pool, idem.Config{Operations: []*idem.Operation{createOrder}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ordersHandler(eng))
	defer srv.Close()
	key := newKey()
	send := func(body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", srv.URL+"/orders", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	r1, b1 := send(`{"item":"book","qty":2}`)
	r2, b2 := send(`{"qty":2,"item":"book"}`)
	if r1.StatusCode != 201 || r2.StatusCode != 201 || !bytes.Equal(b1, b2) || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s, retry %d %s", r1.StatusCode, b1, r2.StatusCode, b2)
	}
	if r3, _ := send(`{"item":"pen","qty":2}`); r3.StatusCode != 409 {
		t.Fatalf("other payload: %d", r3.StatusCode)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d orders, %v", n, err)
	}
}
