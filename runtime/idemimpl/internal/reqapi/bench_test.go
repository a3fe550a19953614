package reqapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

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
//
// Each sub-benchmark reports its own ns/op and allocations; "ratio" runs
// the four in alternating batches of 100 requests, so that all see the
// same load on a shared machine, and reports each one's fastest batch
// (ns/req-<name>) and its ratio to encoding/json's (x-<name>).
func BenchmarkRequestDecode(b *testing.B) {
	for _, v := range decodeVariants(b) {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.op()
			}
		})
	}
	b.Run("ratio", func(b *testing.B) {
		vs := decodeVariants(b)
		const batch = 100
		best := make([]time.Duration, len(vs))
		for b.Loop() {
			for i, v := range vs {
				start := time.Now()
				for range batch {
					v.op()
				}
				if d := time.Since(start); best[i] == 0 || d < best[i] {
					best[i] = d
				}
			}
		}
		for i, v := range vs {
			b.ReportMetric(float64(best[i].Nanoseconds())/batch, "ns/req-"+v.name)
			if i > 0 {
				b.ReportMetric(float64(best[i])/float64(best[0]), "x-"+v.name)
			}
		}
	})
}

type decodeVariant struct {
	name string
	op   func()
}

// decodeVariants are the ways of reading the representative request; the
// first, encoding/json alone, is the baseline.
func decodeVariants(b *testing.B) []decodeVariant {
	body := []byte(benchOrder)
	generated := func(ct, body string) func() {
		r, raw := benchRequest(ct), []byte(body)
		return func() {
			_, q, err := decodeCreateOrderRequest(r, raw)
			if err != nil {
				b.Fatal(err)
			}
			idem.FingerprintCanonical(opCreateOrder.Method, opCreateOrder.Pattern, q.Canonical(opCreateOrder.Policy.FingerprintExclude))
		}
	}
	return []decodeVariant{
		{"encoding-json", func() {
			var o Order
			if err := json.Unmarshal(body, &o); err != nil {
				b.Fatal(err)
			}
		}},
		{"raw-fingerprint", func() {
			var o Order
			if err := json.Unmarshal(body, &o); err != nil {
				b.Fatal(err)
			}
			if _, err := idem.Fingerprint(idem.FingerprintInput{Method: "POST", Pattern: opCreateOrder.Pattern,
				PathParams: []idem.PathParam{{Name: "account", Value: "acme"}}, RawQuery: "tag=a&tag=b&window[from]=1",
				ContentType: "application/json", Body: body, Exclude: opCreateOrder.Policy.FingerprintExclude}); err != nil {
				b.Fatal(err)
			}
		}},
		{"generated-json", generated("application/json", benchOrder)},
		{"generated-form", generated("application/x-www-form-urlencoded", benchForm)},
	}
}
