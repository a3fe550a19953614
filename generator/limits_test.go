package generator

import (
	"errors"
	"strings"
	"testing"
)

// limitsSpec has three operations: createOrder and listOrders, which set
// their own x-request-limits, and getOrder, which takes the root's.
const limitsSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
x-idempotent: {}
%ROOT%
paths:
  /orders:
    post:
      operationId: createOrder
      %OP%
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {note: {type: string}}}
      responses:
        '201': {description: created}
    get:
      operationId: listOrders
      x-request-limits: {maxDepth: 32, maxFields: 1000, maxNameLength: 1024, maxValues: 10000}
      responses:
        '200': {description: the orders}
  /orders/{id}:
    get:
      operationId: getOrder
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200': {description: the order}
`

func limitsModel(t *testing.T, root, op string) (*Model, error) {
	t.Helper()
	spec := strings.NewReplacer("%ROOT%", root, "%OP%", op).Replace(limitsSpec)
	s, err := Load(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: t.TempDir()})
	if err != nil {
		return nil, err
	}
	return s.Model, nil
}

// TestRequestLimitsResolved: an operation's limits are the defaults, then
// the root's x-request-limits, then its own; limits equal to the defaults
// generate nothing, others a table the decoder applies.
func TestRequestLimitsResolved(t *testing.T) {
	m, err := limitsModel(t, "x-request-limits: {maxDepth: 8, maxValues: 500}", "x-request-limits: {maxFields: 20, maxValues: 10000}")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*RequestLimits{}
	for _, o := range m.Operations {
		got[o.ID] = o.Limits
	}
	want := map[string]*RequestLimits{
		"createOrder": {MaxDepth: 8, MaxFields: 20, MaxNameLength: 1024, MaxValues: 10000},
		"getOrder":    {MaxDepth: 8, MaxFields: 1000, MaxNameLength: 1024, MaxValues: 500},
		"listOrders":  nil, // its own limits are the defaults
	}
	for id, w := range want {
		g := got[id]
		if (g == nil) != (w == nil) || g != nil && *g != *w {
			t.Errorf("%s: limits %+v, want %+v", id, g, w)
		}
	}
	m, err = limitsModel(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Operations {
		if o.Limits != nil {
			t.Errorf("%s: limits %+v without x-request-limits", o.ID, o.Limits)
		}
	}

	spec := strings.NewReplacer("%ROOT%", "", "%OP%", "x-request-limits: {maxDepth: 4}").Replace(limitsSpec)
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, f := range files {
		if f.Name == "server.gen.go" {
			src = string(f.Content)
		}
	}
	for _, want := range []string{
		"var limitsCreateOrder = idemimpl.Limits{MaxDepth: 4, MaxFields: 1000, MaxNameLength: 1024, MaxValues: 10000}",
		"q = idemimpl.NewRequest(r, &requestSchemas)\n\tq.SetLimits(&limitsCreateOrder)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("server.gen.go lacks %q", want)
		}
	}
	if n := strings.Count(src, "SetLimits"); n != 1 {
		t.Errorf("SetLimits called %d times, want once (createOrder)", n)
	}
}

// TestRequestLimitsErrors: a limit that is unknown, not an integer or out
// of range is a generation error naming the operation (or the root) and
// the field.
func TestRequestLimitsErrors(t *testing.T) {
	for _, tc := range []struct{ name, root, op, want string }{
		{"out of range", "", "x-request-limits: {maxDepth: 0}",
			`openapi.yaml: line 9: operation "createOrder": x-request-limits.maxDepth: 0 is outside 1..1000`},
		{"too large", "", "x-request-limits: {maxValues: 20000000}",
			`openapi.yaml: line 9: operation "createOrder": x-request-limits.maxValues: 20000000 is outside 1..10000000`},
		{"at the root", "x-request-limits: {maxFields: -1}", "",
			`openapi.yaml: line 4: x-request-limits.maxFields: -1 is outside 1..100000`},
		{"unknown field", "", "x-request-limits: {maxParts: 10}",
			`openapi.yaml: line 9: operation "createOrder": x-request-limits.maxParts: unknown field (want one of maxDepth, maxFields, maxNameLength, maxValues)`},
		{"not an integer", "", "x-request-limits: {maxNameLength: 1.5}",
			`openapi.yaml: line 9: operation "createOrder": x-request-limits.maxNameLength: want an integer, got number 1.5`},
		{"a string", "", "x-request-limits: {maxNameLength: '64'}",
			`openapi.yaml: line 9: operation "createOrder": x-request-limits.maxNameLength: want an integer, got string "64"`},
		{"not an object", "", "x-request-limits: 32",
			`openapi.yaml: line 9: operation "createOrder": x-request-limits: want an object of limits such as {maxDepth: 16}, got number 32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := limitsModel(t, tc.root, tc.op)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrSpec) {
				t.Errorf("error is not ErrSpec: %v", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
