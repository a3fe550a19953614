package idem_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

func fp(t testing.TB, in idem.FingerprintInput) [32]byte {
	t.Helper()
	sum, err := idem.Fingerprint(in)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := idem.FingerprintInput{
		Method: "POST", Pattern: "/accounts/{account}/payments",
		PathParams:  []idem.PathParam{{Name: "account", Value: "a1"}},
		RawQuery:    "b=2&a=1&a=0",
		ContentType: "application/json; charset=utf-8",
		Body:        []byte(`{"amount": 1.0, "to": {"iban": "DE00", "sentAt": "x"}, "tags": ["a", "b"]}`),
		Exclude:     []string{"/to/sentAt", "/tags/0", "/missing/member"},
	}
	want := fp(t, base)

	same := []func(*idem.FingerprintInput){
		func(in *idem.FingerprintInput) {
			in.Body = []byte(`{"tags":["c","b"],"to":{"sentAt":"y","iban":"DE00"},"amount":1}`)
		},
		func(in *idem.FingerprintInput) { in.RawQuery = "a=1&b=2&a=0" },
		func(in *idem.FingerprintInput) { in.RawQuery = "a=%31&b=2&a=0" },
		func(in *idem.FingerprintInput) { in.ContentType = "Application/JSON;charset=UTF-8" },
		func(in *idem.FingerprintInput) {
			in.Body = []byte(`{"amount":1,"to":{"iban":"DE\u0030\u0030"},"tags":["z","b"]}`)
		},
	}
	for i, edit := range same {
		in := base
		edit(&in)
		if got := fp(t, in); got != want {
			t.Errorf("same #%d: fingerprint differs", i)
		}
	}
	differ := []func(*idem.FingerprintInput){
		func(in *idem.FingerprintInput) { in.Method = "PATCH" },
		func(in *idem.FingerprintInput) { in.Pattern = "/accounts/{account}/refunds" },
		func(in *idem.FingerprintInput) { in.PathParams = []idem.PathParam{{Name: "account", Value: "a2"}} },
		func(in *idem.FingerprintInput) { in.RawQuery = "a=0&a=1&b=2" }, // value order counts
		func(in *idem.FingerprintInput) { in.ContentType = "application/merge-patch+json" },
		func(in *idem.FingerprintInput) { in.ContentType = "application/json; charset=latin1" },
		func(in *idem.FingerprintInput) {
			in.Body = []byte(`{"amount": 2, "to": {"iban": "DE00"}, "tags": ["a", "b"]}`)
		},
		func(in *idem.FingerprintInput) { in.Exclude = nil },
	}
	for i, edit := range differ {
		in := base
		edit(&in)
		if got := fp(t, in); got == want {
			t.Errorf("differ #%d: same fingerprint", i)
		}
	}
	// Path parameters and fields cannot run into each other.
	a := idem.FingerprintInput{Method: "POST", Pattern: "/x", PathParams: []idem.PathParam{{Name: "a", Value: "bc"}}}
	b := idem.FingerprintInput{Method: "POST", Pattern: "/x", PathParams: []idem.PathParam{{Name: "ab", Value: "c"}}}
	if fp(t, a) == fp(t, b) {
		t.Error("length prefixes missing")
	}
	// Other media types are bytes.
	txt := idem.FingerprintInput{Method: "POST", Pattern: "/x", ContentType: "text/plain", Body: []byte("{ }")}
	txt2 := txt
	txt2.Body = []byte("{}")
	if fp(t, txt) == fp(t, txt2) {
		t.Error("text bodies were canonicalised")
	}
	for _, body := range []string{`{"a":1,}`, `{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `[1] [2]`, `nul`} {
		in := base
		in.Body = []byte(body)
		if _, err := idem.Fingerprint(in); !errors.Is(err, idem.ErrInvalidJSON) {
			t.Errorf("body %q: %v, want ErrInvalidJSON", body, err)
		}
	}
}

// FuzzFingerprint checks that fingerprinting never panics, is deterministic,
// and that a valid JSON body's fingerprint survives re-encoding.
func FuzzFingerprint(f *testing.F) {
	f.Add([]byte(`{"amount": 10, "metadata": {"sentAt": "2024-01-01"}}`), "application/json", "a=1&b=2", "/metadata/sentAt")
	f.Add([]byte(`[1, 2.50, 1e3, "x", null, true, {"b": [], "a": {}}]`), "application/vnd.api+json", "", "/0")
	f.Add([]byte(`{"a~b": {"c/d": 1}}`), "application/json", "", "/a~0b/c~1d")
	f.Add([]byte("plain text"), "text/plain; charset=utf-8", "q=%zz", "")
	f.Add([]byte(`{"a":`), "application/json", ";;", "/a")
	f.Add([]byte(`1e400`), "application/json", "", "")
	f.Fuzz(func(t *testing.T, body []byte, contentType, query, exclude string) {
		in := idem.FingerprintInput{Method: "POST", Pattern: "/p/{id}",
			PathParams: []idem.PathParam{{Name: "id", Value: "1"}},
			RawQuery:   query, ContentType: contentType, Body: body}
		if exclude != "" {
			in.Exclude = []string{exclude}
		}
		s1, err1 := idem.Fingerprint(in)
		s2, err2 := idem.Fingerprint(in)
		if (err1 == nil) != (err2 == nil) || s1 != s2 {
			t.Fatal("not deterministic")
		}
		if err1 != nil || contentType != "application/json" || len(body) == 0 {
			return
		}
		// Whitespace never counts: json.Indent keeps every literal as written.
		var buf bytes.Buffer
		if err := json.Indent(&buf, body, " ", "\t"); err != nil {
			t.Fatalf("accepted JSON that encoding/json rejects: %q: %v", body, err)
		}
		in.Body = buf.Bytes()
		s3, err := idem.Fingerprint(in)
		if err != nil || s3 != s1 {
			t.Fatalf("re-indented %q: %v, fingerprint changed: %v", body, err, s3 != s1)
		}
	})
}
