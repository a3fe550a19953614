package idemimpl_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

func TestAdditionalProperties(t *testing.T) {
	type plain struct {
		A int `json:"a"`
	}
	for _, tc := range []struct {
		extra map[string]int
		want  string
	}{
		{nil, `{"a":1}`},
		{map[string]int{"z": 2, "b": 3, "a": 9}, `{"a":1,"b":3,"z":2}`}, // sorted; a declared name is not repeated
	} {
		got, err := idemimpl.MarshalAdditional(plain{1}, tc.extra, "a")
		if err != nil || string(got) != tc.want {
			t.Errorf("%v: %s %v, want %s", tc.extra, got, err, tc.want)
		}
	}
	type empty struct{}
	if got, _ := idemimpl.MarshalAdditional(empty{}, map[string]int{"x": 1}); string(got) != `{"x":1}` {
		t.Errorf("no declared members: %s", got)
	}
	var m map[string]int
	if err := idemimpl.UnmarshalAdditional([]byte(`{"a":1,"b":2,"c":3}`), &m, "a"); err != nil || !reflect.DeepEqual(m, map[string]int{"b": 2, "c": 3}) {
		t.Errorf("unmarshal: %v %v", m, err)
	}
	if err := idemimpl.UnmarshalAdditional([]byte(`{"a":1}`), &m, "a"); err != nil || m != nil {
		t.Errorf("none: %v %v", m, err)
	}
	if err := idemimpl.UnmarshalAdditional([]byte(`{"b":"x"}`), &m); err == nil || !strings.Contains(err.Error(), `property "b"`) {
		t.Errorf("wrong type: %v", err)
	}
}

func TestUnionHelpers(t *testing.T) {
	for in, want := range map[string]string{` {"a":1}`: "object", "[1]": "array", `"s"`: "string", "-1.5": "number", "true": "boolean", "false": "boolean", " null": "null", "": ""} {
		if got := idemimpl.JSONKind([]byte(in)); got != want {
			t.Errorf("JSONKind(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range []struct {
		in, tag string
		ok      bool
		err     string
	}{
		{`{"type":"cat"}`, "cat", true, ""},
		{`null`, "", false, ""},
		{`42`, "", false, `want an object with a "type" property, got a number`},
		{`{"name":"x"}`, "", false, `property "type" is required`},
		{`{"type":1}`, "", false, `property "type": want a string, got a number`},
	} {
		tag, ok, err := idemimpl.Discriminator([]byte(tc.in), "type")
		if tag != tc.tag || ok != tc.ok || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("%s: %q %v %v", tc.in, tag, ok, err)
		}
	}
	var p *int
	if err := idemimpl.DecodeVariant([]byte(`"x"`), &p); err == nil || p != nil {
		t.Errorf("a failed decode stored %v", p)
	}
	if err := idemimpl.DecodeVariant([]byte(`7`), &p); err != nil || p == nil || *p != 7 {
		t.Errorf("decode: %v %v", p, err)
	}
	if err := idemimpl.NoVariant([]byte(`{}`), "Cat", "Dog"); err.Error() != "an object value is none of Cat, Dog" {
		t.Error(err)
	}
}

func TestHeaderValue(t *testing.T) {
	type color string
	n := int64(42)
	var nilp *int64
	id := uuid.MustParse("3f0c8c5e-8f0e-4f3c-9d57-5a4c3c1d2b10")
	for _, tc := range []struct {
		v    any
		want string
	}{
		{int64(-7), "-7"}, {int32(7), "7"}, {&n, "42"}, {nilp, ""}, {1.5, "1.5"}, {float64(1e21), "1000000000000000000000"},
		{true, "true"}, {"s", "s"}, {color("red"), "red"}, {id, id.String()},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05Z"}, {idemtype.Date{Year: 2026, Month: 1, Day: 2}, "2026-01-02"},
	} {
		if got := idemimpl.HeaderValue(tc.v); got != tc.want {
			t.Errorf("HeaderValue(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestStrip(t *testing.T) {
	double := func(x int) int { return 2 * x }
	one := 1
	if got := idemimpl.StripPointer(&one, double); *got != 2 || one != 1 {
		t.Error("StripPointer changed its argument or did not apply f")
	}
	s := []int{1, 2}
	if got := idemimpl.StripSlice(s, double); !reflect.DeepEqual(got, []int{2, 4}) || s[0] != 1 {
		t.Error("StripSlice")
	}
	if got := idemimpl.StripMap(map[string]int{"a": 1}, double); got["a"] != 2 {
		t.Error("StripMap")
	}
	if v, _ := idemimpl.StripNullable(idemtype.NewNullable(3), double).Value(); v != 6 || !idemimpl.StripNullable(idemtype.Null[int](), double).IsNull() {
		t.Error("StripNullable")
	}
	if v, _ := idemimpl.StripOrEmpty(idemtype.NewOrEmpty(3), double).Value(); v != 6 || !idemimpl.StripOrEmpty(idemtype.Empty[int](), double).IsEmpty() {
		t.Error("StripOrEmpty")
	}
	if idemimpl.StripPointer(nil, double) != nil || idemimpl.StripSlice(nil, double) != nil || idemimpl.StripMap(nil, double) != nil {
		t.Error("nil in, not nil out")
	}
}
