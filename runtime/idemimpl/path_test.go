package idemimpl

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMatchPath(t *testing.T) {
	compare := []PathSegment{{Wildcard: "w", Literals: []string{"", "...", ""}, Params: []string{"base", "head"}}}
	version := []PathSegment{{Wildcard: "w", Literals: []string{"v", "-", ".json"}, Params: []string{"major", "minor"}}}
	for _, tc := range []struct {
		segs  []PathSegment
		value string
		want  string // "" for no match, else name=value pairs
	}{
		{compare, "main...dev", "base=main head=dev"},
		{compare, "a...b...c", "base=a head=b...c"},
		{compare, "....b", "base=. head=b"},
		{compare, "a......b", "base=a head=...b"},
		{compare, "main..dev", ""},
		{compare, "...dev", ""},
		{compare, "main...", ""},
		{compare, "...", ""},
		{compare, "", ""},
		{version, "v1-2.json", "major=1 minor=2"},
		{version, "v-1-2.json", "major=-1 minor=2"},
		{version, "v1-2-3.json", "major=1 minor=2-3"},
		{version, "v1-2.jso", ""},
		{version, "1-2.json", ""},
		{version, "v-.json", ""},
		{version, "v.json", ""},
		// A literal segment of an operation that shares its route.
		{[]PathSegment{{Wildcard: "w", Literals: []string{"history"}}, {Wildcard: "x", Literals: []string{"", ""}, Params: []string{"base"}}}, "history", "base=history"},
		{[]PathSegment{{Wildcard: "w", Literals: []string{"history"}}, {Wildcard: "x", Literals: []string{"", ""}, Params: []string{"base"}}}, "historyx", ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.SetPathValue("w", tc.value)
		r.SetPathValue("x", tc.value)
		r.SetPathValue("base", "unset")
		ok := MatchPath(r, tc.segs)
		var got []string
		if ok {
			for _, s := range tc.segs {
				for _, name := range s.Params {
					got = append(got, name+"="+r.PathValue(name))
				}
			}
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q against %q: %q, want %q", tc.value, tc.segs[0].Literals, g, tc.want)
		}
		if !ok && r.PathValue("base") != "unset" {
			t.Errorf("%q: no match, but base was set to %q", tc.value, r.PathValue("base"))
		}
	}
}
