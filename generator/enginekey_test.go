package generator

import (
	"strings"
	"testing"
)

// TestEngineKeyParam: the idempotency key header declared as a string
// parameter is the engine's (EngineKey: the decoder skips it, its schema is
// not in RequestSchemas); constraints the engine's key rules do not imply
// are named in a warning; a key declared as another type is read as
// declared, with a warning; a non-idempotent operation's header of that
// name is an ordinary parameter.
func TestEngineKeyParam(t *testing.T) {
	for _, tc := range []struct {
		name, schema, ext string
		engine            bool
		warn              string // substring of the one key warning; "": none
	}{
		{"string", `{type: string}`, `x-idempotent: {}`, true, ""},
		{"long maxLength", `{type: string, maxLength: 256}`, `x-idempotent: {}`, true, ""},
		{"constraints", `{type: string, maxLength: 36, pattern: "^[a-f0-9-]+$"}`, `x-idempotent: {}`, true,
			`header parameter "idempotency-key": pattern, maxLength not checked: the engine parses the key as x-idempotent.keyFormat "uuid" says`},
		{"integer", `{type: integer}`, `x-idempotent: {}`, false,
			`the idempotency key header is not declared a string: its request field holds the header as sent`},
		{"not idempotent", `{type: string, pattern: "^x$"}`, `x-idempotent: false`, false, ""},
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
        - {name: idempotency-key, in: header, schema: ` + tc.schema + `}
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
			if tc.engine && key.Schema != 0 {
				for _, p := range decoded {
					if p.Schema == key.Schema {
						t.Errorf("the key's schema is indexed for the decoder (%d)", key.Schema)
					}
				}
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
