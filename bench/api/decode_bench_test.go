package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// BenchmarkDecode is the generated decoder of one request body (decode,
// validate, unmarshal) beside encoding/json's decode of the same body, what
// the hand-written variant of the bench does: the part of the plain path
// that profiles find costliest, without a database.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"amount":1234,"currency":"EUR","reference":"bench-1234"}`)
	r := httptest.NewRequest("POST", "/baseline", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := decodeCreateBaselineRequest(r, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in struct {
				Amount    int64  `json:"amount"`
				Currency  string `json:"currency"`
				Reference string `json:"reference"`
			}
			if err := json.NewDecoder(bytes.NewReader(body)).Decode(&in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
