package idemimpl_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// table is a hand-written Schemas table exercising every keyword the
// validator knows.
var table = idemimpl.Schemas{List: []idemimpl.Schema{
	{}, // 0
	// 1: an order
	{Types: idemimpl.TypeObject, AdditionalProperties: idemimpl.NoAdditional, Props: []idemimpl.Prop{
		{Name: "amount", Schema: 2, Required: true}, {Name: "big", Schema: 14}, {Name: "code", Schema: 4}, {Name: "email", Schema: 6},
		{Name: "id", Schema: 12}, {Name: "items", Schema: 7, Required: true}, {Name: "kind", Schema: 9}, {Name: "limit", Schema: 10},
		{Name: "note", Schema: 11}, {Name: "price", Schema: 3}, {Name: "tags", Schema: 13}, {Name: "when", Schema: 5},
	}},
	{Types: idemimpl.TypeInteger, Format: idemimpl.FormatInt32, Has: idemimpl.HasMinimum | idemimpl.HasMaximum, Minimum: "1", Maximum: "100", ExclusiveMaximum: true}, // 2
	{Types: idemimpl.TypeNumber, Has: idemimpl.HasMultipleOf | idemimpl.HasMinimum, MultipleOf: "0.01", Minimum: "0.5"},                                               // 3
	{Types: idemimpl.TypeString, Has: idemimpl.HasMinLength | idemimpl.HasMaxLength, MinLength: 3, MaxLength: 3, Pattern: "^[A-Z]+$"},                                 // 4
	{Types: idemimpl.TypeString, Format: idemimpl.FormatDateTime},                                                                                                     // 5
	{Types: idemimpl.TypeString, Format: idemimpl.FormatEmail},                                                                                                        // 6
	{Types: idemimpl.TypeArray, Items: 8, Has: idemimpl.HasMinItems | idemimpl.HasMaxItems, MinItems: 1, MaxItems: 3, UniqueItems: true},                              // 7
	{Types: idemimpl.TypeObject, Props: []idemimpl.Prop{{Name: "sku", Schema: 0, Required: true}}, Has: idemimpl.HasMaxProperties, MaxProperties: 2},                  // 8
	{Types: idemimpl.TypeString, Enum: []string{`"a"`, `"b"`}},                                                                                                        // 9
	{Types: idemimpl.TypeInteger, Default: "10"},                                                                                                                      // 10
	{Types: idemimpl.TypeString | idemimpl.TypeNull},                                                                                                                  // 11
	{Types: idemimpl.TypeString, ReadOnly: true},                                                                                                                      // 12
	{Types: idemimpl.TypeObject, AdditionalProperties: 11, Has: idemimpl.HasMinProperties, MinProperties: 1},                                                          // 13
	{Types: idemimpl.TypeInteger}, // 14
}}

func decodeBody(t *testing.T, body, contentType string) (map[string]any, []idemproblem.Violation, []byte) {
	t.Helper()
	r := httptest.NewRequest("POST", "/orders", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	q := idemimpl.NewRequest(r, &table)
	var got map[string]any
	q.Body([]byte(body), &idemimpl.Body{Required: true, Media: []idemimpl.Media{
		{Type: "application/json", Decode: idemimpl.AsJSON, Schema: 1},
		{Type: "application/x-www-form-urlencoded", Decode: idemimpl.AsForm, Schema: 1},
	}}, &got)
	err := q.Err()
	var ve *idemproblem.ValidationError
	if err != nil && !errors.As(err, &ve) {
		t.Fatalf("error %v is not a validation error", err)
	}
	if ve != nil {
		return got, ve.Violations, nil
	}
	return got, nil, q.Canonical(nil)
}

func TestValidateEveryKeyword(t *testing.T) {
	valid := `{"amount":5,"items":[{"sku":"x"}]}`
	if _, vs, _ := decodeBody(t, valid, "application/json"); vs != nil {
		t.Fatalf("valid body refused: %v", vs)
	}
	tests := []struct {
		body          string
		pointer, rule string
		detail        string
	}{
		{`{"items":[{"sku":1}]}`, "#/amount", "required", "is required"},
		{`{"amount":0,"items":[{"sku":1}]}`, "#/amount", "minimum", "at least 1"},
		{`{"amount":100,"items":[{"sku":1}]}`, "#/amount", "exclusiveMaximum", "less than 100"},
		{`{"amount":2147483648,"items":[{"sku":1}]}`, "#/amount", "format", "int32"},
		{`{"amount":1.5,"items":[{"sku":1}]}`, "#/amount", "type", "must be an integer"},
		{`{"amount":"5","items":[{"sku":1}]}`, "#/amount", "type", "must be an integer"},
		{`{"amount":1,"big":9223372036854775808,"items":[{"sku":1}]}`, "#/big", "type", "between -2^63 and 2^63-1"},
		{`{"amount":1,"price":1.015,"items":[{"sku":1}]}`, "#/price", "multipleOf", "multiple of 0.01"},
		{`{"amount":1,"price":0.25,"items":[{"sku":1}]}`, "#/price", "minimum", "at least 0.5"},
		{`{"amount":1,"code":"EU","items":[{"sku":1}]}`, "#/code", "minLength", "at least 3 characters"},
		{`{"amount":1,"code":"EURO","items":[{"sku":1}]}`, "#/code", "maxLength", "at most 3 characters"},
		{`{"amount":1,"code":"eur","items":[{"sku":1}]}`, "#/code", "pattern", "^[A-Z]+$"},
		{`{"amount":1,"when":"2024-13-01T00:00:00Z","items":[{"sku":1}]}`, "#/when", "format", "date-time"},
		{`{"amount":1,"email":"Bob <bob@example.com>","items":[{"sku":1}]}`, "#/email", "format", "e-mail"},
		{`{"amount":1,"items":[]}`, "#/items", "minItems", "at least 1 item"},
		{`{"amount":1,"items":[{"sku":1},{"sku":2},{"sku":3},{"sku":4}]}`, "#/items", "maxItems", "at most 3 items"},
		{`{"amount":1,"items":[{"sku":1},{"sku":1}]}`, "#/items", "uniqueItems", "items 0 and 1 are equal"},
		{`{"amount":1,"items":[{"sku":1,"a":1,"b":2}]}`, "#/items/0", "maxProperties", "at most 2 members"},
		{`{"amount":1,"items":[{}]}`, "#/items/0/sku", "required", "is required"},
		{`{"amount":1,"kind":"c","items":[{"sku":1}]}`, "#/kind", "enum", `one of "a", "b"`},
		{`{"amount":1,"id":"x","items":[{"sku":1}]}`, "#/id", "readOnly", "read-only"},
		{`{"amount":1,"evil":true,"items":[{"sku":1}]}`, "#/evil", "additionalProperties", "not a member"},
		{`{"amount":1,"AMOUNT":2,"items":[{"sku":1}]}`, "#/AMOUNT", "properties", `only in case`},
		{`{"amount":1,"\u212aind":"a","items":[{"sku":1}]}`, "#/\u212aind", "properties", `"kind" only in case`}, // Kelvin sign folds to k
		{`{"amount":1,"tags":{},"items":[{"sku":1}]}`, "#/tags", "minProperties", "at least 1 member"},
		{`{"amount":1,"tags":{"a":1},"items":[{"sku":1}]}`, "#/tags/a", "type", "must be a string or null"},
		{`{"amount":1,"amount":1,"items":[{"sku":1}]}`, "#", "syntax", `duplicate member "amount"`},
		{`[1]`, "#", "type", "must be an object"},
	}
	for _, tt := range tests {
		_, vs, _ := decodeBody(t, tt.body, "application/json")
		if len(vs) != 1 || vs[0].In != "body" || vs[0].Pointer != tt.pointer || vs[0].Rule != tt.rule || !strings.Contains(vs[0].Detail, tt.detail) {
			t.Errorf("%s:\n got %+v\nwant one violation at %s, rule %s, detail containing %q", tt.body, vs, tt.pointer, tt.rule, tt.detail)
		}
	}
	// Every violation at once, in one list.
	_, vs, _ := decodeBody(t, `{"amount":0,"code":"eu","kind":"z","evil":1,"items":[]}`, "application/json")
	if len(vs) != 6 {
		t.Errorf("want 6 violations (minimum, minLength, pattern, kind, evil, minItems), got %d: %+v", len(vs), vs)
	}
}

func TestDefaultsAndNull(t *testing.T) {
	got, vs, canon := decodeBody(t, `{"amount":5,"note":null,"items":[{"sku":"x"}]}`, "application/json")
	if vs != nil {
		t.Fatal(vs)
	}
	if got["limit"] != json.Number("10") { // untyped: exact digits
		t.Errorf("default not applied: %v", got)
	}
	if _, ok := got["note"]; !ok || got["note"] != nil {
		t.Errorf("null note lost: %v", got)
	}
	_, _, explicit := decodeBody(t, `{"amount":5,"note":null,"limit":10,"items":[{"sku":"x"}]}`, "application/json")
	if string(canon) != string(explicit) {
		t.Errorf("a default and the same value sent differ:\n%s\n%s", canon, explicit)
	}
}

func TestFormsAsJSON(t *testing.T) {
	_, vs, fromJSON := decodeBody(t, `{"amount":5,"code":"EUR","tags":{"a":"x"},"items":[{"sku":"p_1"},{"sku":"p_2"}]}`, "application/json")
	if vs != nil {
		t.Fatal(vs)
	}
	for _, form := range []string{
		"amount=5&code=EUR&tags[a]=x&items[0][sku]=p_1&items[1][sku]=p_2",
		"items[1][sku]=p_2&tags%5Ba%5D=x&items[0][sku]=p%5F1&code=%45UR&amount=5",
	} {
		_, vs, fromForm := decodeBody(t, form, "application/x-www-form-urlencoded")
		if vs != nil {
			t.Fatalf("%s: %v", form, vs)
		}
		// Same decoded request: same canonical body; the media type differs.
		if strings.Replace(string(fromForm), "x-www-form-urlencoded", "json", 1) != string(fromJSON) {
			t.Errorf("form %s\n canonical %s\n JSON      %s", form, fromForm, fromJSON)
		}
	}
	for form, want := range map[string]string{
		"amount=5&amount=6&items[0][sku]=a":    "given 2 times",
		"amount=five&items[0][sku]=a":          "must be an integer",
		"amount=5&items[1][sku]=a":             "indices must run from 0",
		"amount=5&items[0][sku]=a&items=b":     "both as a value and with [brackets]",
		"amount=5&items[0][sku]=a&code=%zz":    "not percent-encoded",
		"amount=5&items[0][sku]=a&Amount=5":    "only in case",
		"amount=5&items[0][sku]=a&tags[a][b]=": "must be a string or null",
	} {
		_, vs, _ := decodeBody(t, form, "application/x-www-form-urlencoded")
		if len(vs) != 1 || !strings.Contains(vs[0].Detail, want) {
			t.Errorf("form %s: %+v, want one violation containing %q", form, vs, want)
		}
	}
}

func TestMediaTypes(t *testing.T) {
	body := `{"amount":5,"items":[{"sku":"x"}]}`
	_, _, want := decodeBody(t, body, "application/json")
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON;charset=UTF-8", ""} {
		if _, _, got := decodeBody(t, body, ct); string(got) != string(want) {
			t.Errorf("Content-Type %q: canonical %s, want %s", ct, got, want)
		}
	}
	for _, ct := range []string{"text/plain", "application/xml", "application/json; charset=latin1", "not a media type"} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Content-Type", ct)
		q := idemimpl.NewRequest(r, &table)
		q.Body([]byte(body), &idemimpl.Body{Media: []idemimpl.Media{{Type: "application/json", Decode: idemimpl.AsJSON, Schema: 1}}}, new(any))
		if err := q.Err(); !errors.Is(err, idem.ErrUnsupportedMediaType) {
			t.Errorf("Content-Type %q: error %v, want 415", ct, err)
		}
	}
}
