package generator

import (
	"fmt"
	"strings"
	"testing"
)

// TestEngineKeyParam: the idempotency key header declared as a string
// parameter is the engine's (EngineKey: the decoder skips it); a schema that
// says more than the key format implies, or a required parameter under an
// optional policy, is KeyChecked (its schema indexed for the engine's
// CheckKey, not decoded); a key declared as another type is read as
// declared, with a warning; a non-idempotent operation's header of that
// name is an ordinary parameter.
func TestEngineKeyParam(t *testing.T) {
	for _, tc := range []struct {
		name, schema, ext string
		required          bool
		engine, checked   bool
		warn              string // substring of the one key warning; "": none
	}{
		{"string", `{type: string}`, `x-idempotent: {}`, false, true, false, ""},
		{"long maxLength", `{type: string, maxLength: 256}`, `x-idempotent: {}`, false, true, false, ""},
		{"uuid format", `{type: string, format: uuid}`, `x-idempotent: {}`, false, true, false, ""},
		{"uuid format, printable keys", `{type: string, format: uuid}`, `x-idempotent: {keyFormat: printable}`, false, true, true, ""},
		{"constraints", `{type: string, maxLength: 36, pattern: "^[a-f0-9-]+$"}`, `x-idempotent: {}`, false, true, true, ""},
		{"upper-case pattern", `{type: string, pattern: "^[0-9A-F-]{36}$"}`, `x-idempotent: {}`, false, true, true,
			`header parameter "idempotency-key": pattern "^[0-9A-F-]{36}$" refuses the keys the engine gives it (x-idempotent.keyFormat "uuid", lower case, e.g. 3f2504e0-`},
		{"v7 pattern, v4 keys", `{type: string, pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-7"}`, `x-idempotent: {keyFormat: uuidv4}`, false, true, true,
			`pattern "^[0-9a-f]{8}-[0-9a-f]{4}-7" refuses the keys the engine gives it (x-idempotent.keyFormat "uuidv4"`},
		{"short maxLength", `{type: string, maxLength: 32}`, `x-idempotent: {}`, false, true, true,
			`every key is refused: the engine's parsed key (x-idempotent.keyFormat "uuid") has 36 characters`},
		{"minLength", `{type: string, minLength: 8}`, `x-idempotent: {keyFormat: printable}`, false, true, true, ""},
		{"enum", `{type: string, enum: [a, b]}`, `x-idempotent: {keyFormat: printable}`, false, false, false,
			`the idempotency key header is not declared a string (or a format: uuid string): its request field holds the header as sent`},
		{"required, optional policy", `{type: string}`, `x-idempotent: {required: false}`, true, true, true, ""},
		{"required, required policy", `{type: string}`, `x-idempotent: {}`, true, true, false, ""},
		{"integer", `{type: integer}`, `x-idempotent: {}`, false, false, false,
			`the idempotency key header is not declared a string (or a format: uuid string): its request field holds the header as sent`},
		{"not idempotent", `{type: string, pattern: "^x$"}`, `x-idempotent: false`, false, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      ` + tc.ext + `
      parameters:
        - {name: idempotency-key, in: header, required: ` + fmt.Sprint(tc.required) + `, schema: ` + tc.schema + `}
        - {name: X-Other, in: header, schema: {type: string}}
      responses:
        "201": {description: created}
`
			s, err := Load(Config{Spec: "openapi.yaml", SpecData: []byte(spec)})
			if err != nil {
				t.Fatal(err)
			}
			o := s.Model.Operations[0]
			if len(o.Params) != 2 {
				t.Fatalf("params %d, want 2", len(o.Params))
			}
			var key *Param
			for _, p := range o.Params {
				if p.Name == "idempotency-key" {
					key = p
				} else if p.EngineKey {
					t.Errorf("%s is EngineKey", p.Where())
				}
			}
			if key.EngineKey != tc.engine {
				t.Errorf("EngineKey %v, want %v", key.EngineKey, tc.engine)
			}
			decoded := o.DecodedParams()
			if tc.engine && (len(decoded) != 1 || decoded[0] == key) || !tc.engine && len(decoded) != 2 {
				t.Errorf("DecodedParams %d, engine key %v", len(decoded), tc.engine)
			}
			if key.KeyChecked != tc.checked {
				t.Errorf("KeyChecked %v, want %v", key.KeyChecked, tc.checked)
			}
			if tc.engine && (key.Schema != 0) != tc.checked {
				t.Errorf("the key's schema index is %d; KeyChecked %v", key.Schema, key.KeyChecked)
			}
			var got []string
			for _, w := range s.Warnings {
				if strings.Contains(strings.ToLower(w.String()), "idempotency") {
					got = append(got, w.String())
				}
			}
			switch {
			case tc.warn == "" && len(got) > 0:
				t.Errorf("unexpected warnings: %q", got)
			case tc.warn != "" && (len(got) != 1 || !strings.Contains(got[0], tc.warn)):
				t.Errorf("warnings %q, want one with %q", got, tc.warn)
			}
		})
	}
}

// engineKeySpec declares the Idempotency-Key header as a parameter of an
// idempotent operation (key format uuid) whose pattern takes version-4
// UUIDs written as the engine writes them (lower case), and the same header
// on a GET and on a POST with x-idempotent: false, which the engine does not
// handle; and a required format: uuid key parameter under an optional key.
const engineKeySpec = `openapi: 3.0.3
info: {title: enginekey, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      x-idempotent: {keyFormat: uuid}
      parameters:
        - {name: Idempotency-Key, in: header, schema: {type: string, pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-4'}}
      responses:
        "201": {description: created, content: {application/json: {schema: {$ref: '#/components/schemas/Seen'}}}}
    get:
      operationId: listOrders
      parameters:
        - {name: Idempotency-Key, in: header, schema: {type: string}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Seen'}}}}
  /refunds:
    post:
      operationId: createRefund
      x-idempotent: {required: false}
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string, format: uuid}}
      responses:
        "201": {description: created, content: {application/json: {schema: {$ref: '#/components/schemas/Seen'}}}}
  /drafts:
    post:
      operationId: createDraft
      x-idempotent: false
      parameters:
        - {name: Idempotency-Key, in: header, schema: {type: string}}
      responses:
        "201": {description: created, content: {application/json: {schema: {$ref: '#/components/schemas/Seen'}}}}
components:
  schemas:
    Seen:
      type: object
      required: [field, engine, run]
      properties:
        field: {type: string}
        engine: {type: string}
        run: {type: integer}
`

// engineKeyTest serves the package generated from engineKeySpec over HTTP
// against PostgreSQL (DATABASE_URL).
const engineKeyTest = `package enginekey

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

type srv struct {
	Unimplemented
	runs atomic.Int64
}

// seen answers what the handler sees of the key: its request field and the
// engine's key (idem.KeyFromContext).
func (s *srv) seen(ctx context.Context, field *string) Seen {
	out := Seen{Field: "<nil>", Engine: "<none>", Run: s.runs.Add(1)}
	if field != nil {
		out.Field = *field
	}
	if k, ok := idem.KeyFromContext(ctx); ok {
		out.Engine = k.Value
	}
	return out
}

func (s *srv) CreateOrder(ctx context.Context, _ pgx.Tx, req CreateOrderRequest) (CreateOrderResponse, error) {
	return CreateOrder201Response{Body: s.seen(ctx, req.IdempotencyKey)}, nil
}
func (s *srv) CreateRefund(ctx context.Context, _ pgx.Tx, req CreateRefundRequest) (CreateRefundResponse, error) {
	u := req.IdempotencyKey.String() // a uuid.UUID: the parameter is required
	return CreateRefund201Response{Body: s.seen(ctx, &u)}, nil
}
func (s *srv) ListOrders(ctx context.Context, req ListOrdersRequest) (ListOrdersResponse, error) {
	return ListOrders200Response{Body: s.seen(ctx, req.IdempotencyKey)}, nil
}
func (s *srv) CreateDraft(ctx context.Context, req CreateDraftRequest) (CreateDraftResponse, error) {
	return CreateDraft201Response{Body: s.seen(ctx, req.IdempotencyKey)}, nil
}

func TestEngineKey(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations})
	if err != nil {
		t.Fatal(err)
	}
	s := &srv{}
	hs := httptest.NewServer(NewHandler(s, engine))
	defer hs.Close()

	send := func(method, path, key string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	seen := func(what string, status int, b []byte, want int) Seen {
		t.Helper()
		var got Seen
		if status != want {
			t.Fatalf("%s: %d %s; want %d", what, status, b, want)
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v: %s", what, err, b)
		}
		return got
	}
	records := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM idem_records").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	const upper = "3F2504E0-4F89-41D3-9A0C-0305E82C3301" // a version-4 UUID in upper case
	const lower = "3f2504e0-4f89-41d3-9a0c-0305e82c3301" // the engine's form of it

	// The engine's parsed key is what the handler's field holds, and it
	// passes the pattern, which a header as sent would not.
	st, b := send("POST", "/orders", upper)
	first := seen("POST with an upper-case key", st, b, 201)
	if first.Field != lower || first.Engine != lower {
		t.Errorf("POST with %s: the field is %q, the engine's key %q; want both %q", upper, first.Field, first.Engine, lower)
	}
	// One key, one record: the lower-case form replays it.
	st, b = send("POST", "/orders", lower)
	if again := seen("POST with the key in lower case", st, b, 201); again.Run != first.Run {
		t.Errorf("the key in lower case ran the handler again (run %d, first %d)", again.Run, first.Run)
	}
	if n := records(); n != 1 {
		t.Fatalf("%d records after one key; want 1", n)
	}

	// A UUID the key format accepts but the spec's pattern does not (a
	// version 7): 400 naming the header, no record, no handler run.
	runs := s.runs.Load()
	st, b = send("POST", "/orders", "01936B2E-8C4A-7B3E-9F1D-2A4C6E8F0B1D")
	var p idemproblem.Problem
	if err := json.Unmarshal(b, &p); err != nil || st != 400 {
		t.Fatalf("POST with a key breaking the pattern: %d %s (%v); want a 400 problem", st, b, err)
	}
	if len(p.Errors) != 1 || p.Errors[0].In != "header" || p.Errors[0].Parameter != "Idempotency-Key" || p.Errors[0].Rule != "pattern" {
		t.Errorf("POST with a key breaking the pattern: %s; want one pattern violation of header Idempotency-Key", b)
	}
	if n := records(); n != 1 {
		t.Errorf("%d records after a refused key; want 1 (the first key's)", n)
	}
	if s.runs.Load() != runs {
		t.Errorf("the handler ran for a refused key")
	}

	// A format: uuid parameter (a uuid.UUID field) holds the engine's key
	// too: a quoted key, which the engine reads as an sf-string, is not
	// refused as a 38-character string that is no UUID.
	st, b = send("POST", "/refunds", "\""+upper+"\"")
	if got := seen("POST /refunds with a quoted key", st, b, 201); got.Field != lower || got.Engine != lower {
		t.Errorf("POST /refunds with a quoted key: the field is %q, the engine's key %q; want both %q", got.Field, got.Engine, lower)
	}

	// The parameter is required while the policy's key is optional: a
	// request without a key is refused as the decoder would refuse it.
	runs = s.runs.Load()
	st, b = send("POST", "/refunds", "")
	p = idemproblem.Problem{}
	if err := json.Unmarshal(b, &p); err != nil || st != 400 || len(p.Errors) != 1 || p.Errors[0].In != "header" || p.Errors[0].Parameter != "Idempotency-Key" || p.Errors[0].Rule != "required" {
		t.Errorf("POST /refunds without a key: %d %s; want 400, header Idempotency-Key is required", st, b)
	}
	if s.runs.Load() != runs {
		t.Errorf("the handler ran without the required key")
	}

	// Operations the engine does not handle read the header as sent.
	st, b = send("GET", "/orders", upper)
	if got := seen("GET", st, b, 200); got.Field != upper || got.Engine != "<none>" {
		t.Errorf("GET: the field is %q, the engine's key %q; want the header as sent, no engine key", got.Field, got.Engine)
	}
	st, b = send("POST", "/drafts", upper)
	if got := seen("POST with x-idempotent: false", st, b, 201); got.Field != upper || got.Engine != "<none>" {
		t.Errorf("x-idempotent: false: the field is %q, the engine's key %q; want the header as sent, no engine key", got.Field, got.Engine)
	}
	if n := records(); n != 2 {
		t.Errorf("%d records; want 2 (orders, refunds)", n)
	}
}
`

// TestEngineKeyServed builds the package generated from engineKeySpec and
// runs engineKeyTest in it, over HTTP against PostgreSQL: an idempotent
// operation's handler sees the engine's parsed key (an upper-case UUID
// lower-cased) in the field of its Idempotency-Key header parameter; a key
// the engine accepts but the parameter's pattern refuses is a 400 naming
// the header and leaves no record; a GET and an x-idempotent: false POST
// read the header as sent.
func TestEngineKeyServed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(engineKeySpec), Package: "enginekey"})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, File{Name: "enginekey_test.go", Content: []byte(engineKeyTest)})
	modulePackage(t, "enginekey", files)
	out := moduleResult(t, "enginekey")
	if !strings.Contains(out, "--- PASS: TestEngineKey ") {
		t.Errorf("TestEngineKey did not pass:\n%s", out)
	}
}
