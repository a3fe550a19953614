package idemclient

import (
	"net/url"
	"strings"
	"testing"
)

// TestQueryObjects: the encodings of object-valued query parameters, and
// what style form cannot carry.
func TestQueryObjects(t *testing.T) {
	type inner struct {
		Gt int `json:"gt"`
	}
	type obj struct {
		A string `json:"a,omitempty"`
		B *inner `json:"b,omitempty"`
		C []int  `json:"c,omitempty"`
	}
	query := func(f func(r *Request) error) (string, error) {
		r := NewRequest("/")
		err := f(r)
		return r.Query.Encode(), err
	}
	for _, tc := range []struct {
		name string
		f    func(r *Request) error
		want string
	}{
		{"deepObject", func(r *Request) error {
			return QueryDeepObject(r, "p", obj{A: "x&y", B: &inner{Gt: 3}, C: []int{1, 2}})
		}, "p[a]=x&y p[b][gt]=3 p[c][0]=1 p[c][1]=2"},
		{"deepObject map", func(r *Request) error { return QueryDeepObject(r, "m", map[string]string{"k": "v"}) }, "m[k]=v"},
		{"deepObject scalar", func(r *Request) error { return QueryDeepObject(r, "n", 7) }, "n=7"},
		{"deepObject nil", func(r *Request) error { return QueryDeepObject(r, "p", (*obj)(nil)) }, ""},
		{"form", func(r *Request) error { return QueryFormObject(r, "c", map[string]int{"r": 1, "g": 2}, false) }, "c=g,2,r,1"},
		{"form exploded", func(r *Request) error {
			return QueryFormObject(r, "c", map[string]any{"r": 1, "g": true, "x": nil}, true)
		}, "c=g=true,r=1"},
		{"form scalar", func(r *Request) error { return QueryFormObject(r, "c", "blue", true) }, "c=blue"},
		{"form nil", func(r *Request) error { return QueryFormObject(r, "c", map[string]int(nil), true) }, ""},
		{"json", func(r *Request) error { return QueryJSON(r, "q", obj{A: "x"}) }, `q={"a":"x"}`},
		{"json nil", func(r *Request) error { return QueryJSON(r, "q", (*obj)(nil)) }, ""},
	} {
		got, err := query(tc.f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var pairs []string
		for _, kv := range strings.Split(got, "&") {
			if kv != "" {
				pairs = append(pairs, kv)
			}
		}
		dec, _ := url.QueryUnescape(strings.Join(pairs, " "))
		if dec != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, dec, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"nested", obj{B: &inner{}}, `style form cannot carry the nested member "b"`},
		{"comma", map[string]string{"a": "x,y"}, `cannot carry the comma in member "a"`},
		{"list", []int{1}, "style form cannot carry []int"},
	} {
		_, err := query(func(r *Request) error { return QueryFormObject(r, "p", tc.v, false) })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `query parameter "p"`) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
