package generator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errorSpec declares createOrder's error response %RESP% (YAML of the
// responses map, after 201) and component schemas %SCHEMAS%; %ROOT% is the
// root x-idempotent, and a GET listOrders declares the same errors.
const errorSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
x-idempotent: %ROOT%
paths:
  /orders:
    post:
      operationId: createOrder
      responses:
        '201': {description: created}
%RESP%
    get:
      operationId: listOrders
      responses:
        '200': {description: the orders}
%RESP%
components:
  schemas:
%SCHEMAS%
`

func errorSpecWith(root, resp, schemas string) string {
	return strings.NewReplacer("%ROOT%", root, "%RESP%", resp, "%SCHEMAS%", schemas).Replace(errorSpec)
}

// problemResp declares a response of status (400, 4XX, default) whose
// problem+json schema is components/schemas/Problem.
func problemResp(status string) string {
	return "        '" + status + "':\n          description: refused\n          content:\n            application/problem+json:\n              schema: {$ref: '#/components/schemas/Problem'}"
}

// stripeResp declares Stripe's default response, as every operation of
// Stripe's spec does.
const stripeResp = "        default:\n          description: Error response.\n          content:\n            application/json:\n              schema: {$ref: '#/components/schemas/error'}"

// stripeSchemas are Stripe's error and api_errors schemas (trimmed), with
// more required members of api_errors after type.
func stripeSchemas(required string) string {
	return `    error: {type: object, required: [error], properties: {error: {$ref: '#/components/schemas/api_errors'}}}
    api_errors: {type: object, required: [type` + required + `], properties: {charge: {type: string, maxLength: 5000}, code: {type: string, maxLength: 5000}, doc_url: {type: string}, message: {type: string, maxLength: 40000}, param: {type: string, maxLength: 5000}, request_id: {type: string}, type: {type: string, enum: [api_error, card_error, idempotency_error, invalid_request_error]}, payment_intent: {type: object}}}`
}

// TestErrorBodyChecks: a declared error schema the profile's refusals
// cannot be written in is a generation error naming the response, the
// schema and what is missing; one they fit, or one of another media type,
// generates.
func TestErrorBodyChecks(t *testing.T) {
	// listOrders comes first (path, then method) and is outside the engine:
	// its refusals (400, 501) follow the root's profile too.
	const where = `openapi.yaml: line 19: operation "listOrders": responses.`
	tests := []struct {
		name, root, resp, schemas string
		want                      []string // nil: generates
	}{
		{"RFC 9457 problem fits", "{}", problemResp("default"),
			`    Problem: {type: object, required: [type, title, status], properties: {type: {type: string, format: uri}, title: {type: string}, status: {type: integer}, detail: {type: string}}}`,
			nil},
		{"problem with the contract's members fits", "{}", problemResp("4XX"),
			`    Problem: {type: object, additionalProperties: false, required: [type, status, code, reason], properties: {type: {type: string}, title: {type: string}, status: {type: number}, detail: {type: string}, instance: {type: string}, code: {type: string}, reason: {type: string}, errors: {type: array, items: {type: object}}}}`,
			nil},
		{"another media type is not checked", "{}",
			"        '400':\n          description: refused\n          content:\n            application/json:\n              schema: {$ref: '#/components/schemas/Problem'}",
			`    Problem: {type: object, required: [message, traceId], properties: {message: {type: string}, traceId: {type: string}}}`,
			nil},
		{"required member not written", "{}", problemResp("400"),
			`    Problem: {type: object, required: [type, status, traceId], properties: {type: {type: string}, status: {type: integer}, traceId: {type: string}}}`,
			[]string{where + `400 (application/problem+json, #/components/schemas/Problem): profile default cannot answer its refusals in the declared schema (and 1 more operations declaring it): it requires /traceId, which default refusals do not have`}},
		{"required member written only sometimes", "{}", problemResp("default"),
			`    Problem: {type: object, required: [detail, errors], properties: {detail: {type: string}, errors: {type: array}}}`,
			[]string{
				`it requires /detail, which only some default refusals have`,
				`it requires /errors, which only some default refusals have`,
			}},
		{"closed schema without the contract's members", "{}", problemResp("4XX"),
			`    Problem: {type: object, additionalProperties: false, properties: {type: {type: string}, title: {type: string}, status: {type: integer}, detail: {type: string}}}`,
			[]string{
				where + `4XX (application/problem+json, #/components/schemas/Problem): profile default cannot answer its refusals in the declared schema (and 1 more operations declaring it): it does not allow /code (additionalProperties: false), which every default refusal has`,
				`it does not allow /reason (additionalProperties: false), which every default refusal has`,
				`it does not allow /errors (additionalProperties: false), which some default refusals have`,
			}},
		{"member of another type", "{}", problemResp("default"),
			`    Problem: {type: object, properties: {status: {type: string}, code: {type: integer}}}`,
			[]string{
				`/status is declared as string; default refusals have an integer there`,
				`/code is declared as integer; default refusals have a string there`,
			}},
		{"enum of a member with open values", "{}", problemResp("default"),
			`    Problem: {type: object, properties: {reason: {type: string, enum: [CARD_DECLINED]}}}`,
			[]string{`/reason is an enum; default refusals put values of their own there`}},
		{"not an object", "{}", problemResp("default"),
			`    Problem: {type: string}`,
			[]string{`the schema is of type string; default refusals are JSON objects`}},
		{"Stripe's error schema fits profile stripe", "{profile: stripe}", stripeResp, stripeSchemas(""), nil},
		{"Stripe's envelope without error.type", "{profile: stripe}", stripeResp,
			strings.Replace(stripeSchemas(""), "type: {type: string, enum: [api_error, card_error, idempotency_error, invalid_request_error]}, ", "", 1),
			[]string{`openapi.yaml: line 19: operation "listOrders": responses.default (application/json, #/components/schemas/error): profile stripe cannot answer its refusals in the declared schema (and 1 more operations declaring it): it declares no /error/type, which every stripe refusal has`}},
		{"Stripe's types without idempotency_error", "{profile: stripe}", stripeResp,
			strings.Replace(stripeSchemas(""), "idempotency_error, ", "", 1),
			[]string{`/error/type does not allow idempotency_error, which stripe refusals use`}},
		{"a member Stripe's refusals do not have, required", "{profile: stripe}", stripeResp, stripeSchemas(", request_id"),
			[]string{`it requires /error/request_id, which stripe refusals do not have`}},
		{"an error schema of another shape under profile stripe", "{profile: stripe}", stripeResp,
			`    error: {type: object, required: [code], properties: {code: {type: string}, message: {type: string}}}`,
			[]string{`it declares no /error, which every stripe refusal has`, `it requires /code, which stripe refusals do not have`}},
		{"Stripe's schema under the default profile is not checked (another media type)", "{}", stripeResp, stripeSchemas(", request_id"), nil},
		{"allOf members count, oneOf is not judged", "{}", problemResp("default"),
			`    Base: {type: object, required: [type], properties: {type: {type: string}}}
    Problem: {allOf: [{$ref: '#/components/schemas/Base'}, {type: object, properties: {status: {type: integer}, extra: {oneOf: [{type: string}, {type: integer}]}}}]}`,
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := errorSpecWith(tc.root, tc.resp, tc.schemas)
			_, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: t.TempDir()})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("generation failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("generation did not fail")
			}
			if !errors.Is(err, ErrSpec) {
				t.Errorf("error is not ErrSpec: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%s\nlacks:\n%s", err, w)
				}
			}
		})
	}
}

// TestProfileDefaults: under profile stripe an operation that sets no
// keyFormat (neither it nor the root) takes printable, Stripe's SDKs' keys
// being no UUIDs; operations outside the engine follow the root's profile.
func TestProfileDefaults(t *testing.T) {
	for _, tc := range []struct{ root, op, format, profile string }{
		{"{}", "", "uuid", "default"},
		{"{profile: stripe}", "", "printable", "stripe"},
		{"{profile: stripe, keyFormat: uuid}", "", "uuid", "stripe"},
		{"{profile: stripe}", "x-idempotent: {keyFormat: opaque}", "opaque", "stripe"},
		{"{}", "x-idempotent: {profile: stripe}", "printable", "default"},
		{"{profile: ietf}", "", "uuid", "ietf"},
	} {
		spec := strings.Replace(orderWith("x-idempotent: "+tc.root, tc.op), "paths:\n", "paths:\n  /orders/{id}:\n    get:\n      operationId: getOrder\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n      responses: {'200': {description: the order}}\n", 1)
		s, err := Load(Config{Spec: "openapi.yaml", SpecData: []byte(spec)})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.root, tc.op, err)
		}
		for _, o := range s.Model.Operations {
			switch o.ID {
			case "createOrder":
				if o.Policy.KeyFormat != tc.format {
					t.Errorf("root %s, op %q: keyFormat %s, want %s", tc.root, tc.op, o.Policy.KeyFormat, tc.format)
				}
			case "getOrder":
				if o.Profile != tc.profile {
					t.Errorf("root %s: getOrder's profile %s, want the root's %s", tc.root, o.Profile, tc.profile)
				}
			}
		}
	}
}

// TestStripeSpecUnderProfileStripe: Stripe's own description, with nothing
// but x-idempotent: {profile: stripe} added, generates: the error schema
// every one of its operations declares holds the profile's refusals, and
// its POSTs take Stripe's keys.
func TestStripeSpecUnderProfileStripe(t *testing.T) {
	if testing.Short() {
		t.Skip("loads Stripe's 4 MB description; skipped with -short")
	}
	data, err := os.ReadFile(filepath.Join("testdata", "specs", "stripe-spec3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(string(data), "\nopenapi: 3.0.0\n", "\nopenapi: 3.0.0\nx-idempotent: {profile: stripe}\n", 1)
	if spec == string(data) {
		t.Fatal("no openapi line to add x-idempotent after")
	}
	s, err := Load(Config{Spec: "stripe-spec3.yaml", SpecData: []byte(spec)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range s.Model.Operations {
		if o.Profile != "stripe" || (o.Idempotent && o.Policy.KeyFormat != "printable") {
			t.Errorf("%s: profile %s, keyFormat %s", o.ID, o.Profile, o.Policy.KeyFormat)
		}
		if o.Idempotent {
			n++
		}
	}
	if n != 222 {
		t.Errorf("%d idempotent operations, want Stripe's 222 POSTs", n)
	}
}
