package generator

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// clashSpec has a clash of every kind of identifier.
const clashSpec = `openapi: 3.0.3
info: {title: clashes, version: '1'}
x-idempotent: {}
paths:
  /orders:
    get:
      operationId: getOrder
      parameters:
        - {name: page, in: query, schema: {type: integer}}
        - {name: Page, in: header, schema: {type: integer}}
      responses:
        '200':
          description: ok
          headers:
            X-Rate-Limit: {schema: {type: integer}}
            x-rate_limit: {schema: {type: string}}
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Order'}
  /orders/{id}:
    get:
      operationId: get-order
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/order'}}}}
    post:
      operationId: createOrder
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/createOrderRequest'}}}
      responses:
        '201': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Contact'}}}}
components:
  schemas:
    Order:
      type: object
      properties:
        '+1': {type: integer}
        '-1': {type: integer}
        add: {type: string}
        Add: {type: string}
        reaction: {type: string, enum: ['+1', '-1', add, Add, '/', '*', star, '']}
    order: {type: object, properties: {n: {type: integer}}}
    createOrderRequest: {type: object, properties: {n: {type: integer}}}
    Contact:
      oneOf:
        - {type: string}
        - {type: string, format: email}
`

func clashConfig(spec string, rename map[string]Rename) Config {
	return Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "out", Rename: rename}
}

// TestClashes: every kind of identifier gets a unique name without a
// config, and a warning names both sources and the names chosen.
func TestClashes(t *testing.T) {
	files, warnings, err := Generate(clashConfig(clashSpec, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := allSource(files)
	for _, want := range []string{
		"type Order struct", "type Order2 struct", // #/components/schemas/order
		"type CreateOrderRequest struct", "type CreateOrderRequest2 struct", // the schema keeps its name
		"CreateOrder(ctx context.Context, tx pgx.Tx, req CreateOrderRequest2) (CreateOrderResponse, error)",
		"Plus1 *int64 `json:\"+1,omitzero\"`", "Minus1 *int64 `json:\"-1,omitzero\"`",
		"Add *string `json:\"Add,omitzero\"`", "Add2 *string `json:\"add,omitzero\"`",
		`OrderReactionPlus1 OrderReaction = "+1"`, `OrderReactionMinus1 OrderReaction = "-1"`,
		`OrderReactionAdd OrderReaction = "Add"`, `OrderReactionAdd2 OrderReaction = "add"`,
		`OrderReactionRoot OrderReaction = "/"`, `OrderReactionStar OrderReaction = "star"`,
		`OrderReactionStar2 OrderReaction = "*"`, `OrderReactionEmpty OrderReaction = ""`,
		"Page *int64 // header parameter \"Page\"", "Page2 *int64 // query parameter \"page\"",
		"XRateLimit *int64 // header X-Rate-Limit, sent when not nil", "XRateLimit2 string // header X-Rate_limit, sent when not empty",
		"GetOrder(ctx context.Context, req GetOrderRequest) (GetOrderResponse, error)",
		"GetOrder2(ctx context.Context, req GetOrder2Request) (GetOrder2Response, error)",
		"String  *string", "String2 *string",
	} {
		if !containsCode(src, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	for _, want := range []string{
		`openapi.yaml: Go identifier Order (package) is generated for both schema #/components/schemas/Order and schema #/components/schemas/order; the latter is named Order2 (set rename "#/components/schemas/order" in the config to choose another name)`,
		`Go identifier CreateOrderRequest (package) is generated for both schema #/components/schemas/createOrderRequest and operation "createOrder" (POST /orders/{id}) #/paths/~1orders~1{id}/post; the latter is named CreateOrderRequest2 (set rename "#/paths/~1orders~1{id}/post"`,
		`Go identifier Add (fields of #/components/schemas/Order) is generated for both property #/components/schemas/Order/properties/Add and property #/components/schemas/Order/properties/add; the latter is named Add2`,
		`Go identifier OrderReactionStar (package) is generated for both enum value #/components/schemas/Order/properties/reaction/enum/6 and enum value #/components/schemas/Order/properties/reaction/enum/5; the latter is named OrderReactionStar2`,
		`Go identifier GetOrder (methods of Server) is generated for both operation #/paths/~1orders/get and operation #/paths/~1orders~1{id}/get; the latter is named GetOrder2`,
		`is generated for both parameter #/paths/~1orders/get/parameters/header/Page and parameter #/paths/~1orders/get/parameters/query/page; the latter is named Page2`,
		`is generated for both header #/paths/~1orders/get/responses/200/headers/X-Rate-Limit and header #/paths/~1orders/get/responses/200/headers/x-rate_limit; the latter is named XRateLimit2`,
		`is generated for both union member #/components/schemas/Contact/oneOf/0 and union member #/components/schemas/Contact/oneOf/1; the latter is named String2`,
	} {
		if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no warning %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if testing.Short() {
		return
	}
	modulePackage(t, "clashes", files)
	moduleResult(t, "clashes")
}

// TestClashesStable: names do not depend on the order of the spec, and a
// schema that clashes with nothing changes no other name.
func TestClashesStable(t *testing.T) {
	base, _, err := Generate(clashConfig(clashSpec, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The components in the opposite order.
	i := strings.Index(clashSpec, "    Order:\n")
	j := strings.Index(clashSpec, "    order: ")
	reordered := clashSpec[:i] + clashSpec[j:] + clashSpec[i:j]
	again, _, err := Generate(clashConfig(reordered, nil))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := allSource(base), allSource(again); a != b {
		t.Errorf("output depends on the order of the components")
	}
	extra := clashSpec + "    Zeta: {type: object, properties: {order: {type: string, enum: [a]}}}\n"
	more, _, err := Generate(clashConfig(extra, nil))
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`(?m)^(?:type|func(?: \([^)]*\))?) (\w+)|^\t(\w+) `)
	names := func(src string) map[string]bool {
		m := map[string]bool{}
		for _, g := range ids.FindAllStringSubmatch(src, -1) {
			m[g[1]+g[2]] = true
		}
		return m
	}
	before, after := names(allSource(base)), names(allSource(more))
	for n := range before {
		if !after[n] {
			t.Errorf("adding an unrelated schema removed identifier %s", n)
		}
	}
}

// TestRenameEveryKind: rename reaches every kind of identifier by its spec
// location.
func TestRenameEveryKind(t *testing.T) {
	rename := map[string]Rename{
		"#/components/schemas/order":                              {Name: "OrderSummary"},
		"#/components/schemas/Order/properties/add":               {Name: "AddLower"},
		"#/components/schemas/Order/properties/reaction":          {Name: "Mood", Type: "Mood"},
		"#/components/schemas/Order/properties/reaction/enum/0":   {Name: "MoodThumbsUp"},
		"#/paths/~1orders~1{id}/get":                              {Name: "FetchOrder"},
		"#/paths/~1orders/get/parameters/query/page":              {Name: "PageNumber"},
		"#/paths/~1orders/get/responses/200/headers/x-rate_limit": {Name: "RateLimitText"},
		"#/paths/~1orders/get/responses/200":                      {Name: "OrderFound"},
		"#/components/schemas/Contact/oneOf/1":                    {Name: "Email"},
		"#/components/schemas/createOrderRequest":                 {Name: "NewOrder"},
	}
	files, warnings, err := Generate(clashConfig(clashSpec, rename))
	if err != nil {
		t.Fatal(err)
	}
	src := allSource(files)
	for _, want := range []string{
		"type OrderSummary struct", "AddLower *string `json:\"add,omitzero\"`", "Mood *Mood `json:\"reaction,omitzero\"`",
		`MoodThumbsUp Mood = "+1"`, "FetchOrder(ctx context.Context, req FetchOrderRequest) (FetchOrderResponse, error)",
		"PageNumber *int64 // query parameter", "RateLimitText string // header X-Rate_limit",
		"type OrderFound struct", "Email  *string", "type NewOrder struct",
	} {
		if !containsCode(src, want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	for _, w := range warnings {
		// Left: the enum constants add/Add and star/* (not renamed).
		if strings.Contains(w.Message, "Go identifier") && !strings.Contains(w.Message, "Go identifier MoodAdd ") && !strings.Contains(w.Message, "Go identifier MoodStar ") {
			t.Errorf("a renamed clash still warns: %s", w)
		}
	}

	for _, tc := range []struct {
		rename map[string]Rename
		want   string
	}{
		{map[string]Rename{"#/components/schemas/nope": {Name: "X"}}, `openapi.yaml: rename "#/components/schemas/nope": no Go identifier is generated at this location`},
		{map[string]Rename{"#/components/schemas/order": {Name: "lower"}}, `openapi.yaml: rename "#/components/schemas/order": "lower" is not an exported Go identifier`},
		{map[string]Rename{"#/components/schemas/order": {Name: "Server"}}, `openapi.yaml: rename "#/components/schemas/order": Server is already generated for idemgen`},
		{map[string]Rename{"#/components/schemas/order": {Name: "Same"}, "#/components/schemas/Order": {Name: "Same"}},
			`openapi.yaml: rename "#/components/schemas/order": Same is already generated for schema #/components/schemas/Order`},
	} {
		_, _, err := Generate(clashConfig(clashSpec, tc.rename))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rename %v: error %v, want %q", tc.rename, err, tc.want)
		}
	}
}

// containsCode reports whether src holds want, ignoring how gofmt aligned
// the columns.
func containsCode(src, want string) bool {
	return strings.Contains(squeezeBlanks(src), squeezeBlanks(want))
}

// squeezeBlanks replaces every run of spaces and tabs by one space. It is a
// loop rather than a regexp because the real specs' generated files are
// megabytes long (GitHub's types: 14 MB), and a regexp over them took
// minutes under -race on a loaded machine.
func squeezeBlanks(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' {
			if !blank {
				b.WriteByte(' ')
			}
			blank = true
			continue
		}
		blank = false
		b.WriteByte(c)
	}
	return b.String()
}

func allSource(files []File) string {
	var b bytes.Buffer
	for _, f := range files {
		b.Write(f.Content)
	}
	return b.String()
}
