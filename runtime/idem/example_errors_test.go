package idem_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Error and FieldError stand for the types idemgen generates from a spec
// whose error schema is {code, message, fields: [{field, issue}]}.
type Error struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Fields  []FieldError `json:"fields,omitempty"`
}

type FieldError struct {
	Field string `json:"field"`
	Issue string `json:"issue"`
}

// A service whose spec declares an error schema of its own answers the
// engine's refusals in it with Config.Errors; the profile still chooses
// the status and Retry-After. docs/errors.md shows this mapping.
func ExampleErrorMapper() {
	pool, _ := pgxpool.New(context.Background(), "postgres://localhost/shop") // connects on first use
	engine, err := idem.New(pool, idem.Config{
		Errors: func(r *http.Request, p *idemproblem.Problem) *idem.Response {
			e := Error{Code: strings.ToLower(p.Reason), Message: p.Detail}
			for _, v := range p.Errors {
				e.Fields = append(e.Fields, FieldError{Field: v.Pointer, Issue: v.Rule})
			}
			return idem.JSONError(p, e)
		},
	})
	if err != nil {
		panic(err)
	}

	w := httptest.NewRecorder()
	engine.WriteError(w, httptest.NewRequest("POST", "/orders", nil), idem.ProfileDefault,
		&idemproblem.ValidationError{Violations: []idemproblem.Violation{{In: "body", Pointer: "#/qty", Rule: "minimum", Detail: "must be at least 1"}}})
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Println(w.Body)
	// Output:
	// 400 application/json
	// {"code":"request_invalid","message":"body #/qty: must be at least 1","fields":[{"field":"#/qty","issue":"minimum"}]}
}

// The README's mapping (the code block after its
// `<!-- go: excerpt runtime/idem/example_errors_test.go -->` line), kept
// compiling and running here; examples/docsnippets' TestSnippets holds the
// README's lines to this file's.
func ExampleConfig_errors() {
	pool, _ := pgxpool.New(context.Background(), "postgres://localhost/shop") // connects on first use
	engine, err := idem.New(pool, idem.Config{
		Errors: func(r *http.Request, p *idemproblem.Problem) *idem.Response { // in idem.Config
			return idem.JSONError(p, Error{Code: strings.ToLower(p.Reason), Message: p.Detail})
		},
	})
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	engine.WriteError(w, httptest.NewRequest("POST", "/orders", nil), idem.ProfileDefault, idem.ErrKeyRequired)
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Println(w.Body)
	// Output:
	// 400 application/json
	// {"code":"idempotency_key_required","message":"the request needs an idempotency key header"}
}
