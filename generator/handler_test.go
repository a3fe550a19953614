package generator

import (
	"path/filepath"
	"testing"
)

// handlerTest drives the generated payments package's non-idempotent
// handlers over HTTP (no database: idempotent handlers are the engine's, and
// are driven by the runtime's end-to-end tests).
const handlerTest = `package payments

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/jackc/pgx/v5/pgxpool"
)

type srv struct{ Unimplemented }

func (srv) ListPayments(ctx context.Context, req ListPaymentsRequest) (ListPaymentsResponse, error) {
	if req.Limit == nil || *req.Limit != 2 || req.Status == nil || *req.Status != PaymentStatusCaptured || len(req.Tag) != 2 {
		return nil, errors.New("bad decode")
	}
	return ListPayments200Response{Body: ListPayments200ResponseBody{Items: []Payment{}}, XNextCursor: "c2"}, nil
}

func (srv) DeletePayment(ctx context.Context, req DeletePaymentRequest) (DeletePaymentResponse, error) {
	return nil, errors.New("boom")
}

func TestHandlers(t *testing.T) {
	var hooked []error
	h := NewHandler(srv{}, nil, WithErrorHook(func(_ *http.Request, err error) { hooked = append(hooked, err) }))
	tests := []struct {
		method, target string
		status         int
		body           string
	}{
		{"GET", "/payments?limit=2&status=captured&tag=a&tag=b", 200, "{\"items\":[]}"},
		{"GET", "/payments?limit=abc", 400, "limit"},
		{"GET", "/payments?status=lost", 400, "status"},
		{"GET", "/payments/not-a-uuid", 400, "id"},
		{"GET", "/payments/3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10", 501, "Not Implemented"},
		{"DELETE", "/payments/3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10", 500, ""},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != tc.status || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s %s: %d %s; want %d containing %q", tc.method, tc.target, rec.Code, body, tc.status, tc.body)
		}
		if tc.status == 200 && rec.Header().Get("X-Next-Cursor") != "c2" {
			t.Errorf("%s %s: X-Next-Cursor = %q", tc.method, tc.target, rec.Header().Get("X-Next-Cursor"))
		}
	}
	if len(hooked) != 1 {
		t.Errorf("error hook saw %v, want the DELETE error", hooked)
	}
}

// The engine's Config.Errors answers the handlers' refusals too: a request
// that does not decode, Unimplemented's 501, a method's error.
func TestHandlersCustomErrors(t *testing.T) {
	// Never connected to: no idempotent operation is called.
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := idem.New(pool, idem.Config{Errors: func(r *http.Request, p *idemproblem.Problem) *idem.Response {
		return idem.JSONError(p, map[string]string{"kind": strings.ToLower(p.Reason)})
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(srv{}, engine)
	for _, tc := range []struct {
		method, target string
		status         int
		body           string
	}{
		{"GET", "/payments?limit=abc", 400, ` + "`" + `{"kind":"request_invalid"}` + "`" + `},
		{"GET", "/payments/3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10", 501, ` + "`" + `{"kind":"not_implemented"}` + "`" + `},
		{"DELETE", "/payments/3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10", 500, ` + "`" + `{"kind":"internal_error"}` + "`" + `},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
		if rec.Code != tc.status || rec.Body.String() != tc.body || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s %s; want %d %s", tc.method, tc.target, rec.Code, rec.Header().Get("Content-Type"), rec.Body, tc.status, tc.body)
		}
	}
}
`

func TestGeneratedHandlers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	cfg, err := LoadConfig(filepath.Join("testdata", "golden", "payments", "idemgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, File{Name: "handlers_test.go", Content: []byte(handlerTest)})
	modulePackage(t, "handlers", files)
	moduleResult(t, "handlers")
}
