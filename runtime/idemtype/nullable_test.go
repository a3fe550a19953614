package idemtype_test

import (
	"encoding/json"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemtype"
)

type patch struct {
	Note  idemtype.Nullable[string]           `json:"note,omitzero"`
	Items idemtype.Nullable[[]int]            `json:"items,omitzero"`
	Meta  idemtype.OrEmpty[map[string]string] `json:"meta,omitzero"`
}

// TestNullableThreeStates: absent, null and a value decode apart and encode
// back as they came.
func TestNullableThreeStates(t *testing.T) {
	for _, tc := range []struct {
		in                   string
		present, null, value bool
	}{
		{`{}`, false, false, false},
		{`{"note":null}`, true, true, false},
		{`{"note":"x"}`, true, false, true},
		{`{"note":""}`, true, false, true},
	} {
		var p patch
		if err := json.Unmarshal([]byte(tc.in), &p); err != nil {
			t.Fatal(err)
		}
		v, ok := p.Note.Value()
		if p.Note.Present() != tc.present || p.Note.IsNull() != tc.null || ok != tc.value || p.Note.IsZero() == tc.present {
			t.Errorf("%s: present %v null %v value %q,%v", tc.in, p.Note.Present(), p.Note.IsNull(), v, ok)
		}
		out, err := json.Marshal(p)
		if err != nil || string(out) != tc.in {
			t.Errorf("%s encodes as %s (%v)", tc.in, out, err)
		}
	}
	var p patch
	if err := json.Unmarshal([]byte(`{"note":5}`), &p); err == nil {
		t.Error("a number decoded into Nullable[string]")
	}
	n := idemtype.NewNullable("a")
	n.SetNull()
	if !n.IsNull() {
		t.Error("SetNull")
	}
	n.Set("b")
	if v, ok := n.Value(); !ok || v != "b" {
		t.Error("Set")
	}
	n.Unset()
	if !n.IsZero() || idemtype.Null[int]().IsZero() {
		t.Error("Unset or Null")
	}
	// A nil slice is a value, not null.
	b, _ := json.Marshal(patch{Items: idemtype.NewNullable([]int(nil))})
	if string(b) != `{"items":null}` {
		t.Errorf("nil slice value: %s", b)
	}
}

func TestOrEmpty(t *testing.T) {
	for _, tc := range []struct {
		in           string
		empty, value bool
		out          string
	}{
		{`{}`, false, false, `{}`},
		{`{"meta":""}`, true, false, `{"meta":""}`},
		{`{"meta":{"a":"b"}}`, false, true, `{"meta":{"a":"b"}}`},
		{`{"meta":null}`, false, false, `{}`},
	} {
		var p patch
		if err := json.Unmarshal([]byte(tc.in), &p); err != nil {
			t.Fatal(err)
		}
		_, ok := p.Meta.Value()
		if p.Meta.IsEmpty() != tc.empty || ok != tc.value {
			t.Errorf("%s: empty %v value %v", tc.in, p.Meta.IsEmpty(), ok)
		}
		if out, _ := json.Marshal(p); string(out) != tc.out {
			t.Errorf("%s encodes as %s", tc.in, out)
		}
	}
	if err := json.Unmarshal([]byte(`{"meta":"x"}`), new(patch)); err == nil {
		t.Error(`"x" decoded as a map or empty`)
	}
}
