package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemaOf loads a JSON schema through kin-openapi, as a spec would.
func schemaOf(t *testing.T, src string) *openapi3.SchemaRef {
	t.Helper()
	doc := `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{},"components":{"schemas":{"S":` + src + `}}}`
	d, err := openapi3.NewLoader().LoadFromData([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatalf("schema %s: %v", src, err)
	}
	return d.Components.Schemas["S"]
}

func TestGenerateSatisfiesConstraints(t *testing.T) {
	cases := []string{
		`{"type":"integer","minimum":5,"maximum":9,"multipleOf":3}`,
		`{"type":"integer","exclusiveMinimum":10}`,
		`{"type":"number","maximum":-2.5}`,
		`{"type":"string","pattern":"^[A-Z]{3}$"}`,
		`{"type":"string","pattern":"^(sk|pk)_[a-f0-9]{8,}$"}`,
		`{"type":"string","pattern":"^\\d{4}-\\d{2}$"}`,
		`{"type":"string","minLength":20,"maxLength":25}`,
		`{"type":"string","maxLength":3}`,
		`{"type":"string","format":"date-time"}`,
		`{"type":"string","format":"uuid"}`,
		`{"type":"string","format":"email"}`,
		`{"type":"string","enum":["red","green"]}`,
		`{"type":"array","items":{"type":"integer","minimum":1},"minItems":3,"uniqueItems":true}`,
		`{"type":"object","required":["a","b"],"properties":{"a":{"type":"string"},"b":{"type":"object","required":["c"],"properties":{"c":{"type":"boolean"}}},"d":{"type":"integer"}},"additionalProperties":false}`,
		`{"type":"object","minProperties":2,"properties":{"x":{"type":"integer"},"y":{"type":"string"}}}`,
		`{"allOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}},{"type":"object","required":["b"],"properties":{"b":{"type":"string"}}}]}`,
		`{"oneOf":[{"type":"string","const":"fixed"},{"type":"integer"}]}`,
		`{"type":["string","null"],"minLength":2}`,
		// An allOf of scalar ranges is their intersection (a part alone
		// would give 5 or 1).
		`{"allOf":[{"type":"integer","minimum":5},{"minimum":6,"maximum":7}]}`,
		`{"allOf":[{"type":"number","exclusiveMinimum":10},{"maximum":10.5,"multipleOf":0.25}]}`,
		`{"allOf":[{"type":"integer","multipleOf":4},{"multipleOf":6,"minimum":13}]}`,
		`{"allOf":[{"type":"string","enum":["a","b","c"]},{"enum":["c","d"]}]}`,
		`{"allOf":[{"type":"string","maxLength":8},{"minLength":6}]}`,
		// A pattern and length bounds together: the repetitions grow.
		`{"type":"string","pattern":"^[a-z0-9]+$","minLength":40}`,
		`{"type":"string","pattern":"^ch_[A-Za-z0-9]*$","minLength":40,"maxLength":40}`,
		`{"type":"string","pattern":"^(ab)+$","minLength":7}`,
	}
	for _, src := range cases {
		sr := schemaOf(t, src)
		for _, n := range []int{0, 1, 2} {
			v, err := generate(sr, n)
			if err != nil {
				t.Errorf("%s (choice %d): %v", src, n, err)
				continue
			}
			if err := validate(sr, v); err != nil {
				b, _ := json.Marshal(v)
				t.Errorf("%s (choice %d): generated %s, which the schema refuses: %v", src, n, b, err)
			}
		}
	}
}

func TestGenerateRefusesImpossibleBounds(t *testing.T) {
	for src, want := range map[string]string{
		`{"type":"integer","minimum":3,"maximum":4,"multipleOf":5}`:                  "no integer satisfies minimum/maximum/multipleOf",
		`{"allOf":[{"type":"integer","minimum":3},{"maximum":2}]}`:                   "no integer satisfies minimum/maximum/multipleOf",
		`{"type":"string","pattern":"^[A-Z]{3}$","minLength":5}`:                     `pattern "^[A-Z]{3}$" with minLength 5: the value generated, "AAA", has 3 characters`,
		`{"type":"string","pattern":"^sk_[a-z]{24}$","minLength":10,"maxLength":20}`: `pattern "^sk_[a-z]{24}$" with length 10..20: the value generated, "sk_aaaaaaaaaaaaaaaaaaaaaaaa", has 27 characters`,
	} {
		v, err := generate(schemaOf(t, src), 0)
		if err == nil || err.Error() != want {
			t.Errorf("%s: generated %v, error %v; want the error %s", src, v, err, want)
		}
	}
}

func TestVariantChangesTheFingerprint(t *testing.T) {
	sr := schemaOf(t, `{"type":"object","required":["amount","currency"],"additionalProperties":false,"properties":{
		"amount":{"type":"integer","minimum":1,"maximum":1},
		"currency":{"type":"string","enum":["EUR"]},
		"metadata":{"type":"object","properties":{"sentAt":{"type":"string","format":"date-time"},"note":{"type":"string"}}}}}`)
	body := map[string]any{"amount": json.Number("1"), "currency": "EUR", "metadata": map[string]any{"sentAt": "2024-01-02T03:04:05Z"}}
	// amount and currency have a single value; sentAt is excluded: only
	// adding an optional member is left.
	v, ok := variant(sr, body, []string{"/metadata/sentAt"})
	if !ok {
		t.Fatal("no variant")
	}
	if err := validate(sr, v); err != nil {
		t.Fatalf("variant %v is invalid: %v", v, err)
	}
	if canonical(v, []string{"/metadata/sentAt"}) == canonical(body, []string{"/metadata/sentAt"}) {
		t.Fatalf("variant %v fingerprints like the body", v)
	}
	if _, ok := variant(schemaOf(t, `{"type":"object","additionalProperties":false,"properties":{"a":{"const":1}},"required":["a"]}`),
		map[string]any{"a": json.Number("1")}, nil); ok {
		t.Fatal("a variant of a body with no choice left")
	}
}

func TestReorderedIsCanonicallyEqual(t *testing.T) {
	body := map[string]any{"b": []any{json.Number("1"), map[string]any{"y": true, "x": nil}}, "a": "s"}
	raw, _ := json.Marshal(body)
	re := reordered(body)
	if string(re) == string(raw) {
		t.Fatal("the reordered body has the same bytes")
	}
	var x, y any
	if err := json.Unmarshal(raw, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(re, &y); err != nil {
		t.Fatalf("reordered body is not JSON: %v\n%s", err, re)
	}
	if !equalJSON(x, y) {
		t.Fatalf("reordered %s is another value than %s", re, raw)
	}
	if strings.Index(string(re), `"b"`) > strings.Index(string(re), `"a"`) {
		t.Fatalf("members not reversed: %s", re)
	}
}
