package routers_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/service"
	"github.com/idemgen/idemgen/examples/routers"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestMountedUnderPrefix serves the payments example under /api on each
// router recipe, over real HTTP and a real PostgreSQL, and checks that the
// routes (with a path parameter) answer under the prefix, that idempotency
// still holds (a retry is a replay, byte for byte, and no second payment),
// that nothing answers outside the prefix, and that the generated client
// reaches the mounted service.
func TestMountedUnderPrefix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mount func(api.Server, *idem.Engine) http.Handler
	}{
		{"ServeMux", routers.ServeMux},
		{"chi Mount", routers.ChiMount},
		{"chi per route", routers.ChiRoutes},
		{"chi StripPrefix", routers.ChiStripPrefix},
		{"echo", routers.Echo},
		{"gin", routers.Gin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
			svc := service.New(db.Pool, gateway.New(), nil)
			engine, err := idem.New(db.Pool, idem.Config{Operations: api.IdempotentOperations, Recover: svc.RecoveryHooks(), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(tc.mount(svc, engine))
			t.Cleanup(srv.Close)
			exercise(t, srv.URL)
		})
	}
}

func exercise(t *testing.T, base string) {
	t.Helper()
	// Outside the prefix: 404, and no payment made.
	if res := do(t, "POST", base+"/payments", uuid.NewString(), `{"amount":100,"currency":"EUR"}`); res.status != http.StatusNotFound {
		t.Errorf("POST /payments outside /api: %d %s", res.status, res.body)
	}
	if res := do(t, "GET", base+"/api/nothing-here", "", ""); res.status != http.StatusNotFound {
		t.Errorf("GET /api/nothing-here: %d %s", res.status, res.body)
	}

	// An idempotent POST under the prefix, and its retry: a replay.
	key := uuid.NewString()
	first := do(t, "POST", base+"/api/payments", key, `{"amount":4200,"currency":"EUR"}`)
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("POST /api/payments: %d %v %s", first.status, first.header, first.body)
	}
	again := do(t, "POST", base+"/api/payments", key, `{"amount":4200,"currency":"EUR"}`)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
		t.Errorf("retry of POST /api/payments: %d replayed=%q\n%s\nwant\n%s", again.status, again.header.Get("Idempotent-Replayed"), again.body, first.body)
	}
	if conflict := do(t, "POST", base+"/api/payments", key, `{"amount":1,"currency":"EUR"}`); conflict.status != http.StatusConflict {
		t.Errorf("same key, another payload: %d %s", conflict.status, conflict.body)
	}
	var p struct{ ID string }
	if err := json.Unmarshal(first.body, &p); err != nil || p.ID == "" {
		t.Fatalf("payment %s: %v", first.body, err)
	}

	// A path parameter under the prefix, on a GET and an idempotent PATCH.
	if res := do(t, "GET", base+"/api/payments/"+p.ID, "", ""); res.status != http.StatusOK || !strings.Contains(string(res.body), p.ID) {
		t.Errorf("GET /api/payments/%s: %d %s", p.ID, res.status, res.body)
	}
	key = uuid.NewString()
	capture := do(t, "PATCH", base+"/api/payments/"+p.ID, key, `{}`)
	if capture.status != http.StatusOK || !strings.Contains(string(capture.body), `"captured"`) {
		t.Fatalf("PATCH /api/payments/%s: %d %s", p.ID, capture.status, capture.body)
	}
	if res := do(t, "PATCH", base+"/api/payments/"+p.ID, key, `{}`); res.status != http.StatusOK || res.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(res.body, capture.body) {
		t.Errorf("retry of PATCH /api/payments/%s: %d replayed=%q %s", p.ID, res.status, res.header.Get("Idempotent-Replayed"), res.body)
	}

	// One payment in all: the replay made none, the 404 none.
	list := do(t, "GET", base+"/api/payments", "", "")
	var page struct{ Payments []json.RawMessage }
	if err := json.Unmarshal(list.body, &page); list.status != http.StatusOK || err != nil || len(page.Payments) != 1 {
		t.Errorf("GET /api/payments: %d %s (%v): want one payment", list.status, list.body, err)
	}

	// The generated client, given the prefix in its base URL.
	c, err := api.NewClient(base + "/api")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.GetPayment(t.Context(), api.GetPaymentRequest{PaymentID: p.ID})
	if err != nil {
		t.Fatalf("client GetPayment: %v", err)
	}
	if _, ok := res.Response.(api.GetPayment200Response); !ok {
		t.Errorf("client GetPayment: %T", res.Response)
	}
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url, key, body string) result {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{res.StatusCode, res.Header, b}
}
