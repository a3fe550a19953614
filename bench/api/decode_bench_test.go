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

// BenchmarkEncode is the generated encoder of the 201 response beside
// encoding/json's Encoder writing the same value, what the hand-written
// variant does.
func BenchmarkEncode(b *testing.B) {
	p := Payment{ID: 42, Amount: 1234, Currency: "EUR", Reference: "bench-1234"}
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeCreateBaselineResponse(CreateBaseline201Response{Body: p}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := json.NewEncoder(&buf).Encode(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
