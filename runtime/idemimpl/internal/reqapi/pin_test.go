package reqapi

import (
	"encoding/hex"
	"net/http"
	"net/url"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestCanonicalFingerprintPinned holds the fingerprint of generated
// decoders (format v2: idem.FingerprintCanonical over Request.Canonical) to
// the bytes records stored before the JSON toolkit was shared: canonical
// JSON, pointer exclusions and the recorded media type all feed it. The
// values were computed before internal/jsonkit existed (commit 8056c2e)
// and must never be updated; a new rule needs a new format version.
func TestCanonicalFingerprintPinned(t *testing.T) {
	t.Parallel()
	order := func(ct, body string) *http.Request {
		r := &http.Request{Method: "POST", URL: &url.URL{Path: "/accounts/acme/orders", RawQuery: "tag=b&tag=a&window[from]=1&dryRun=true"},
			Header: http.Header{"Content-Type": {ct}, "X-Account": {"alice"}, "X-Request-Id": {"r1"}, "Cookie": {"session=s1"}}}
		r.SetPathValue("account", "acme")
		return r
	}
	note := func() *http.Request {
		r := &http.Request{Method: "PATCH", URL: &url.URL{Path: "/notes/7"}, Header: http.Header{"Content-Type": {"application/merge-patch+json"}}}
		r.SetPathValue("id", "7")
		return r
	}
	tests := []struct {
		name string
		r    *http.Request
		body string
		want string
	}{
		{"json with an excluded member", order("application/json; charset=UTF-8", benchOrder), benchOrder, "d99a2ff7d752dace9bb38c0bd57cbaf4c022b722d33bd83281bd2c9fb416e07c"},
		{"integer past 2^53 and strings", order("application/json", `{"quantity":1,"amount":9007199254740993,"currency":"EUR","note":"\u00e9<&>\u2028\ud83d\ude00"}`),
			`{"quantity":1,"amount":9007199254740993,"currency":"EUR","note":"\u00e9<&>\u2028\ud83d\ude00"}`, "dca3e574047b693568c05a6f7ec8f1cc1bfccc012f56df2a920476571d4cd18b"},
		{"form", order("application/x-www-form-urlencoded", benchForm), benchForm, "60a5141530c0c56a4f57525229c7884d838e94b0e73b8a9e6714eea4a3ebd411"},
		{"merge patch", note(), `{"note":null,"title":"T\u00e9"}`, "3d69d2cdfedb693d66ae83084ea942b31b7e3cb436cbd1c7298849256ffe6794"},
	}
	for _, tt := range tests {
		var canonical []byte
		var op *idem.Operation
		if tt.r.Method == "PATCH" {
			_, q, err := decodeUpdateNoteRequest(tt.r, []byte(tt.body))
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			op, canonical = &opUpdateNote, q.Canonical(opUpdateNote.Policy.FingerprintExclude)
		} else {
			_, q, err := decodeCreateOrderRequest(tt.r, []byte(tt.body))
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			op, canonical = &opCreateOrder, q.Canonical(opCreateOrder.Policy.FingerprintExclude)
		}
		sum := idem.FingerprintCanonical(op.Method, op.Pattern, canonical)
		if got := hex.EncodeToString(sum[:]); got != tt.want {
			t.Errorf("%s: fingerprint %s, want %s\ncanonical: %s", tt.name, got, tt.want, canonical)
		}
	}
}
