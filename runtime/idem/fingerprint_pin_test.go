package idem_test

import (
	"encoding/hex"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestFingerprintPinned holds the raw-request fingerprint (format v1:
// hand-written handlers and the webhook inbox) to the bytes records stored
// before the JSON toolkit was shared: a change to how JSON is canonicalised,
// pointers excluded or media types recorded would make every retry of a
// stored request a conflict. The values were computed by the code as it was
// before internal/jsonkit existed (commit 8056c2e) and must never be
// updated; a new rule needs a new format version.
func TestFingerprintPinned(t *testing.T) {
	t.Parallel()
	post := func(ct, body string, exclude ...string) idem.FingerprintInput {
		return idem.FingerprintInput{Method: "POST", Pattern: "/accounts/{account}/payments",
			PathParams: []idem.PathParam{{Name: "account", Value: "a1"}},
			RawQuery:   "b=2&a=1&a=0", ContentType: ct, Body: []byte(body), Exclude: exclude}
	}
	tests := []struct {
		name string
		in   idem.FingerprintInput
		want string
	}{
		{"json with exclusions", post("application/json; charset=UTF-8",
			`{"amount": 1.0, "to": {"iban": "DE00", "sentAt": "x"}, "tags": ["a", "b"], "a~b": {"c/d": 1, "e": 2}}`,
			"/to/sentAt", "/tags/0", "/a~0b/c~1d", "/missing/member"), "f881dd043d4ebd34c67f603b4f6ad3b4e34ac0bdd9663a6342c21c0fc9541e0e"},
		{"+json, numbers and strings", post("application/vnd.api+json",
			`[1e3, 2.50, -0, 1E-7, 123456789012, "\u00e9\u20ac\ud83d\ude00", "<&>\u2028\u007f", {"b": [], "a": {}, "\u00e9": null, "z": true}]`), "13453cceab6a66cc5c7d183e49226eef6ce2995b72da089fa0ebc19c25a24b91"},
		{"integer past 2^53 (rounded in v1)", post("application/json", `{"amount": 9007199254740993}`), "14eb843ff4c54d5f72ff08dc5b7d33c353e5c8cb595ae3450abc0c45a7566f76"},
		{"text/json is bytes in v1", post("text/json", `{ "a": 1 }`), "edcac32bc5a88cabd254d5bd99bb1208e8b3d677cf53cb6fafa3aaecbe7707cd"},
		{"text with charset", post("Text/Plain; Charset=ISO-8859-1; format=flowed", "plain text"), "295092aebd65462254cd6738914dcacef86cfe36ed71245ade62981d9c71c592"},
		{"unparseable media type", post("application/json;;", `{ }`), "352b67a37edce18be74b92278c81b96a3112e564fad79efd80f6d25e13491650"},
		{"no media type, no body", post("", ""), "cd616df09f9040d0a74eae1ec13f307259683dc914114567e8fd0494b185c96d"},
		{"undecodable query", idem.FingerprintInput{Method: "PATCH", Pattern: "/x", RawQuery: "q=%zz"}, "949bb95d22b8ed85ee49d98efa8d7e448eeaa7865b47f6a0fa0893ddbe8b5bb7"},
	}
	for _, tt := range tests {
		sum, err := idem.Fingerprint(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := hex.EncodeToString(sum[:]); got != tt.want {
			t.Errorf("%s: fingerprint %s, want %s", tt.name, got, tt.want)
		}
	}
}
