package generator

import (
	"errors"
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

// TestErrorBodyChecks: a declared error schema the profile's refusals
// cannot be written in is a generation error naming the response, the
// schema and what is missing; one they fit, or one of another media type,
// generates.
func TestErrorBodyChecks(t *testing.T) {
	// listOrders comes first (path, then method) and is outside the engine:
	// its refusals (400, 501) follow the root's profile too.
	const where = `openapi.yaml: operation "listOrders": responses.`
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
