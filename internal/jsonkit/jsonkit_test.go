package jsonkit_test

import (
	"encoding/json"
	"errors"
	"mime"
	"reflect"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

func TestParsePointer(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want []string
	}{
		{"/a", []string{"a"}},
		{"/a~1b/c~0d", []string{"a/b", "c~d"}},
		{"/~01", []string{"~1"}}, // ~0 first: ~01 is ~1, not ~/ (RFC 6901 section 4)
		{"/~10", []string{"/0"}},
		{"/", []string{""}},
		{"/a//0", []string{"a", "", "0"}},
	}
	for _, tt := range ok {
		got, err := jsonkit.ParsePointer(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePointer(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if back := jsonkit.Pointer(got...); back != tt.in && tt.in != "/~01" {
			t.Errorf("Pointer(%q) = %q, want %q", got, back, tt.in)
		}
	}
	bad := []struct{ in, msg string }{
		{"", `JSON pointer "" must start with /`},
		{"a/b", `JSON pointer "a/b" must start with /`},
		{"/a~", `JSON pointer "/a~": ~ must be followed by 0 or 1`},
		{"/a~2", `JSON pointer "/a~2": ~ must be followed by 0 or 1`},
		{"/ok/~x", `JSON pointer "/ok/~x": ~ must be followed by 0 or 1`},
	}
	for _, tt := range bad {
		if got, err := jsonkit.ParsePointer(tt.in); err == nil || err.Error() != tt.msg {
			t.Errorf("ParsePointer(%q) = %q, %v; want error %q", tt.in, got, err, tt.msg)
		}
	}
}

func TestEscapeToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a": "a", "a/b": "a~1b", "~": "~0", "~/": "~0~1", "/~1": "~1~01", "": ""} {
		if got := jsonkit.EscapeToken(in); got != want {
			t.Errorf("EscapeToken(%q) = %q, want %q", in, got, want)
		}
		if toks, err := jsonkit.ParsePointer("/" + want); err != nil || toks[0] != in {
			t.Errorf("ParsePointer(/%s) = %q, %v; want %q back", want, toks, err, in)
		}
	}
	if got := jsonkit.Pointer(); got != "" {
		t.Errorf("Pointer() = %q, want the empty pointer", got)
	}
}

func TestIndex(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tok  string
		n, i int
		ok   bool
	}{
		{"0", 1, 0, true}, {"9", 10, 9, true}, {"10", 11, 10, true},
		{"1", 1, 0, false}, {"01", 5, 0, false}, {"-1", 5, 0, false}, {"", 5, 0, false},
		{"1a", 5, 0, false}, {"+1", 5, 0, false}, {"99999999999999999999", 5, 0, false},
	} {
		if i, ok := jsonkit.Index(tt.tok, tt.n); i != tt.i || ok != tt.ok {
			t.Errorf("Index(%q, %d) = %d, %v; want %d, %v", tt.tok, tt.n, i, ok, tt.i, tt.ok)
		}
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGetRemove(t *testing.T) {
	t.Parallel()
	const doc = `{"a/b":{"c~d":1,"e":2},"list":[[1,2],[3,4]],"x":[0,1,2]}`
	get := []struct {
		ptr  string
		want string // "" for absent
	}{
		{"/a~1b/c~0d", "1"},
		{"/list/1/0", "3"},
		{"/list/01", ""},
		{"/list/2", ""},
		{"/x/-", ""},
		{"/a~1b/missing", ""},
		{"/a~1b/e/deeper", ""},
	}
	for _, tt := range get {
		toks, err := jsonkit.ParsePointer(tt.ptr)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := jsonkit.Get(decode(t, doc), toks)
		switch {
		case tt.want == "" && ok:
			t.Errorf("Get(%s) = %v, want nothing", tt.ptr, v)
		case tt.want != "" && (!ok || encode(t, v) != tt.want):
			t.Errorf("Get(%s) = %v, %v; want %s", tt.ptr, v, ok, tt.want)
		}
	}
	remove := []struct{ ptr, want string }{
		{"/a~1b/c~0d", `{"a/b":{"e":2},"list":[[1,2],[3,4]],"x":[0,1,2]}`},
		{"/x/0", `{"a/b":{"c~d":1,"e":2},"list":[[1,2],[3,4]],"x":[1,2]}`},
		{"/list/1/0", `{"a/b":{"c~d":1,"e":2},"list":[[1,2],[4]],"x":[0,1,2]}`},
		{"/list/0", `{"a/b":{"c~d":1,"e":2},"list":[[3,4]],"x":[0,1,2]}`},
		{"/x/3", doc},
		{"/nothing/here", doc},
		{"/a~1b/e/deeper", doc},
	}
	for _, tt := range remove {
		toks, _ := jsonkit.ParsePointer(tt.ptr)
		if got := encode(t, jsonkit.Remove(decode(t, doc), toks)); got != tt.want {
			t.Errorf("Remove(%s) = %s, want %s", tt.ptr, got, tt.want)
		}
	}
	// An item of a top-level array: the document itself is the new slice.
	if got := encode(t, jsonkit.Remove(decode(t, `[1,2,3]`), []string{"1"})); got != `[1,3]` {
		t.Errorf("Remove(/1) of [1,2,3] = %s", got)
	}
	if got := encode(t, jsonkit.Remove(decode(t, `[1]`), nil)); got != `[1]` {
		t.Errorf("Remove of no tokens = %s, want the document", got)
	}
}

func TestMediaType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ct, want string
		err      bool
	}{
		{"application/json", "application/json", false},
		{"Application/JSON; Charset=UTF-8", "application/json", false},
		{"  text/plain ; format=flowed", "text/plain", false},
		{"", "", false},
		{"  ", "", false},
		{"application/json;;", "application/json", true},
		{"Text/Plain; x", "text/plain", true},
		{"nonsense", "nonsense", false}, // mime takes a lone type
	} {
		mt, _, err := jsonkit.ParseMediaType(tt.ct)
		if mt != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseMediaType(%q) = %q, %v; want %q, error %v", tt.ct, mt, err, tt.want, tt.err)
		}
		if got := jsonkit.MediaType(tt.ct); got != tt.want {
			t.Errorf("MediaType(%q) = %q, want %q", tt.ct, got, tt.want)
		}
	}
	if _, params, _ := jsonkit.ParseMediaType(`text/plain; Charset="UTF-8"`); params["charset"] != "UTF-8" {
		t.Errorf("parameters %v, want charset UTF-8 (names lower-cased, values as sent)", params)
	}
}

// TestIsJSON is the one rule of what a JSON media type is. Ranges are not:
// the generator's isJSON once took */* and application/* for JSON, so a
// body of a range read as JSON on one side and as bytes on the other.
func TestIsJSON(t *testing.T) {
	t.Parallel()
	for mt, want := range map[string][2]bool{ // IsJSON, IsStandardJSON
		"application/json":                {true, true},
		"Application/JSON":                {true, true},
		"application/json; charset=utf-8": {true, true},
		"application/problem+json":        {true, true},
		"application/merge-patch+json":    {true, true},
		"application/vnd.api+json":        {true, true},
		"application/*+json":              {true, true}, // every type it admits is JSON
		"text/json":                       {true, false},
		"application/x-json":              {true, false},
		"*/*":                             {false, false},
		"application/*":                   {false, false},
		"text/plain":                      {false, false},
		"application/jsonl":               {false, false},
		"application/json-seq":            {false, false},
		"application/x-ndjson":            {false, false},
		"multipart/form-data":             {false, false},
		"":                                {false, false},
	} {
		if got := jsonkit.IsJSON(mt); got != want[0] {
			t.Errorf("IsJSON(%q) = %v, want %v", mt, got, want[0])
		}
		if got := jsonkit.IsStandardJSON(mt); got != want[1] {
			t.Errorf("IsStandardJSON(%q) = %v, want %v", mt, got, want[1])
		}
	}
}

func TestMatchRange(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		declared, mt string
		want         int
	}{
		{"application/json", "application/json", 3},
		{"application/*", "application/json", 2},
		{"*/*", "application/json", 1},
		{"*/*", "*/*", 3},
		{"text/*", "application/json", 0},
		{"application/json", "application/problem+json", 0},
		{"application/*", "applications/json", 0},
		{"json/*", "x-json/json", 0}, // the type is a prefix, not any part
	} {
		if got := jsonkit.MatchRange(tt.declared, tt.mt); got != tt.want {
			t.Errorf("MatchRange(%q, %q) = %d, want %d", tt.declared, tt.mt, got, tt.want)
		}
	}
	if !jsonkit.IsRange("*/*") || !jsonkit.IsRange("image/*") || jsonkit.IsRange("application/json") {
		t.Error("IsRange")
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in      string
		exclude []string
		want    string
	}{
		// RFC 8785 section 3.2.3: members by UTF-16 code units, so U+FB01
		// sorts after U+1F600 (a surrogate pair starting 0xD83D), which
		// code points would put last.
		{`{"\ufb01": 1, "\ud83d\ude00": 2, "a": 3, "\u20ac": 4}`, nil, `{"a":3,"` + "\u20ac" + `":4,"` + "\U0001F600" + `":2,"` + "\ufb01" + `":1}`},
		{`[1.0, 1e3, -0, 1E-7, 2.50, 9007199254740993, 1e21]`, nil, `[1,1000,0,1e-7,2.5,9007199254740992,1e+21]`},
		{`"<&>\u2028\u007f\u001f"`, nil, `"<&>` + "\u2028\u007f" + `\u001f"`},
		{`{"a": {"b": 1, "c": [1, 2]}, "d": 2}`, []string{"/a/b", "/a/c/0", "/zz"}, `{"a":{"c":[2]},"d":2}`},
		{`{"n": 12345678901234567890.5}`, []string{"/x"}, `{"n":12345678901234567000}`},
	} {
		var ex [][]string
		for _, p := range tt.exclude {
			toks, err := jsonkit.ParsePointer(p)
			if err != nil {
				t.Fatal(err)
			}
			ex = append(ex, toks)
		}
		got, err := jsonkit.Canonical([]byte(tt.in), ex)
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%s, %q) = %s, %v; want %s", tt.in, tt.exclude, got, err, tt.want)
		}
	}
	for _, in := range []string{`{"a":1,}`, `{"a":1,"a":2}`, "\"\xff\"", `[1] [2]`, `nul`, ``} {
		if _, err := jsonkit.Canonical([]byte(in), nil); !errors.Is(err, jsonkit.ErrInvalidJSON) {
			t.Errorf("Canonical(%q): %v, want ErrInvalidJSON", in, err)
		} else if !strings.HasPrefix(err.Error(), "body is not valid JSON: ") {
			t.Errorf("Canonical(%q): %q does not say what was wrong", in, err)
		}
	}
}

// TestParseMediaTypeAsMime: ParseMediaType answers as mime.ParseMediaType
// for every value that parses, the plain lower-case ones it takes without
// parsing included.
func TestParseMediaTypeAsMime(t *testing.T) {
	for _, ct := range []string{
		"application/json", "application/merge-patch+json", "*/*", "application/*", "text/x.y_z~1",
		"Application/JSON", "application/json;charset=utf-8", "application/json ", " application/json",
		"application/json/x", "application", "application/", "/json", "application/j\"son", "text/plain; format=flowed",
	} {
		mt, params, err := jsonkit.ParseMediaType(ct)
		wmt, wparams, werr := mime.ParseMediaType(ct)
		if werr != nil {
			if err == nil {
				t.Errorf("ParseMediaType(%q) = %q, no error; mime: %v", ct, mt, werr)
			}
			continue
		}
		if err != nil || mt != wmt || len(params) != len(wparams) {
			t.Errorf("ParseMediaType(%q) = %q %v %v; mime: %q %v", ct, mt, params, err, wmt, wparams)
		}
		for k, v := range wparams {
			if params[k] != v {
				t.Errorf("ParseMediaType(%q): %s=%q, mime: %q", ct, k, params[k], v)
			}
		}
	}
}
