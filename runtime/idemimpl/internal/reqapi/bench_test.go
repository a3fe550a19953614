package reqapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// benchOrder is a representative createOrder body: nine members, three
// items, three metadata entries (about 400 bytes).
const benchOrder = `{"quantity":3,"amount":129900,"price":433.00,"currency":"EUR","note":"leave at the door",` +
	`"express":true,"items":[{"sku":"AB-1","count":2,"label":"socks"},{"sku":"CD-22","label":"hat"},{"sku":"EF-333","count":1}],` +
	`"metadata":{"clientSentAt":"2026-11-24T06:00:00Z","order":"6735","channel":"web"}}`

const benchForm = `quantity=3&amount=129900&price=433.00&currency=EUR&note=leave+at+the+door&express=true` +
	`&items[0][sku]=AB-1&items[0][count]=2&items[0][label]=socks&items[1][sku]=CD-22&items[1][label]=hat&items[2][sku]=EF-333&items[2][count]=1` +
	`&metadata[clientSentAt]=2026-11-24T06:00:00Z&metadata[order]=6735&metadata[channel]=web`

func benchRequest(contentType string) *http.Request {
	r := &http.Request{Method: "POST", URL: &url.URL{Path: "/accounts/acme/orders", RawQuery: "tag=a&tag=b&window[from]=1"},
		Header: http.Header{"Content-Type": {contentType}, "X-Account": {"alice"}, "Cookie": {"session=s1"}}}
	r.SetPathValue("account", "acme")
	return r
}

// BenchmarkRequestDecode measures what the generated decoder costs per
// request: decode (strict), validate against the schema, unmarshal the
// typed request, and fingerprint its canonical form — against a plain
// encoding/json decode of the same body into the same type, and against
// the engine's fingerprint of the raw request (RFC 8785 over the body,
// what a hand-written handler gets). See BENCHMARKS.md.
func BenchmarkRequestDecode(b *testing.B) {
	body := []byte(benchOrder)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var o Order
			if err := json.Unmarshal(body, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-fingerprint", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var o Order
			if err := json.Unmarshal(body, &o); err != nil {
				b.Fatal(err)
			}
			if _, err := idem.Fingerprint(idem.FingerprintInput{Method: "POST", Pattern: opCreateOrder.Pattern,
				PathParams: []idem.PathParam{{Name: "account", Value: "acme"}}, RawQuery: "tag=a&tag=b&window[from]=1",
				ContentType: "application/json", Body: body, Exclude: opCreateOrder.Policy.FingerprintExclude}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct{ name, ct, body string }{
		{"generated-json", "application/json", benchOrder},
		{"generated-form", "application/x-www-form-urlencoded", benchForm},
	} {
		b.Run(c.name, func(b *testing.B) {
			r, body := benchRequest(c.ct), []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				_, q, err := decodeCreateOrderRequest(r, body)
				if err != nil {
					b.Fatal(err)
				}
				idem.FingerprintCanonical(opCreateOrder.Method, opCreateOrder.Pattern, q.Canonical(opCreateOrder.Policy.FingerprintExclude))
			}
		})
	}
}
