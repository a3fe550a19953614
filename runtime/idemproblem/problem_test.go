package idemproblem_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// TestEncodeMembers: what Encode writes is what Members describes — every
// member of a full problem is listed, every member marked Always is in a
// bare one, and the fields that are not the client's (RetryAfter,
// Retryable, Err) are never written.
func TestEncodeMembers(t *testing.T) {
	members := map[string]idemproblem.ErrorMember{}
	for _, m := range idemproblem.Members() {
		members[m.Pointer] = m
	}
	full := &idemproblem.Problem{Type: "about:blank", Title: "Bad Request", Status: 400, Detail: "d", Instance: "/i",
		Code: "ERR400_INVALID_REQUEST", Reason: "REQUEST_INVALID", Errors: []idemproblem.Violation{{In: "body", Pointer: "#/a", Rule: "required", Detail: "is required"}},
		RetryAfter: time.Second, Retryable: true, Err: errors.New("secret cause")}
	bare := &idemproblem.Problem{}
	for name, p := range map[string]*idemproblem.Problem{"full": full, "bare": bare} {
		b := idemproblem.Encode(p)
		if strings.Contains(string(b), "secret") || strings.Contains(string(b), "etry") {
			t.Errorf("%s: %s writes what is not the client's", name, b)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
		for k, v := range got {
			m, ok := members["/"+k]
			if !ok {
				t.Errorf("%s: member %q is not in Members", name, k)
				continue
			}
			if typ := jsonType(v); typ != m.Type {
				t.Errorf("%s: member %q is %s, Members says %s", name, k, typ, m.Type)
			}
		}
		for ptr, m := range members {
			if _, ok := got[ptr[1:]]; !ok && (m.Always || p == full) {
				t.Errorf("%s: member %s missing from %s", name, ptr, b)
			}
		}
	}
}

func jsonType(v json.RawMessage) string {
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	}
	if !slices.Contains(v, '.') {
		return "integer"
	}
	return "number"
}

// TestViolationText: a violation names where it is and what was expected;
// a ValidationError lists every one.
func TestViolationText(t *testing.T) {
	e := &idemproblem.ValidationError{Violations: []idemproblem.Violation{
		{In: "body", Pointer: "#/items/0/quantity", Rule: "minimum", Detail: "must be at least 1"},
		{In: "query", Parameter: "limit", Pointer: "#", Rule: "type", Detail: "must be an integer"},
		{In: "body", Pointer: "#", Rule: "syntax", Detail: "is not JSON"},
	}}
	want := `request invalid: body #/items/0/quantity: must be at least 1; query parameter "limit" #: must be an integer; body: is not JSON`
	if got := e.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
