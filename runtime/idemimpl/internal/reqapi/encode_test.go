package reqapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl/internal/reqapi"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// listing answers ListOrders with resp, whatever it is asked.
type listing struct {
	service
	resp reqapi.ListOrdersResponse
}

func (l listing) ListOrders(context.Context, reqapi.ListOrdersRequest) (reqapi.ListOrdersResponse, error) {
	return l.resp, nil
}

// embedded has ListOrders200Response's marker method, so a Server may
// return it, but it is not one of the declared response types.
type embedded struct {
	reqapi.ListOrders200Response
	Extra int
}

// TestResponseEncoder sends GET /orders to servers whose ListOrders returns
// what the generated encoder (encodeListOrdersResponse, a type switch over
// the declared responses) must tell apart: a declared response is encoded,
// Unimplemented's is 501, a nil response and a type that only embeds a
// declared one are 500 problem+json.
func TestResponseEncoder(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{MaxConns: 2})
	engine, err := idem.New(db, idem.Config{Operations: reqapi.IdempotentOperations})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		srv    reqapi.Server
		status int
		body   string
	}{
		{"declared", listing{resp: reqapi.ListOrders200Response{Body: reqapi.Echo{"status": "open"}}}, 200, `"status":"open"`},
		{"unimplemented", reqapi.Unimplemented{}, 501, `"Not Implemented"`},
		{"nil", listing{}, 500, `"status":500`},
		{"embedded", listing{resp: embedded{ListOrders200Response: reqapi.ListOrders200Response{Body: reqapi.Echo{"status": "open"}}}}, 500, `"status":500`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(reqapi.NewHandler(tc.srv, engine))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/orders")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
				t.Fatalf("got %d %s; want %d with %s", resp.StatusCode, b, tc.status, tc.body)
			}
			if tc.status == 500 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("500 as %s, want problem+json", resp.Header.Get("Content-Type"))
			}
		})
	}
}
