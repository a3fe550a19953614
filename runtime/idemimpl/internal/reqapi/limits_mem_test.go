package reqapi

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// hostile is one shape of hostile input and how to decode it as the
// generated handler does.
type hostile struct {
	name   string
	size   int    // bytes of input the client sent
	refuse string // the rule it must be refused by; "" for none
	decode func() error
}

func hostileForm(name, body, refuse string) hostile {
	r := &http.Request{Method: "POST", URL: &url.URL{Path: "/x"}, Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}
	r.SetPathValue("account", "acme")
	b := []byte(body)
	return hostile{name, len(body), refuse, func() error { _, _, err := decodeCreateOrderRequest(r, b); return err }}
}

func hostileJSON(name, body, refuse string) hostile {
	r := &http.Request{Method: "POST", URL: &url.URL{Path: "/x"}, Header: http.Header{"Content-Type": {"application/json"}}}
	r.SetPathValue("account", "acme")
	b := []byte(body)
	return hostile{name, len(body), refuse, func() error { _, _, err := decodeCreateOrderRequest(r, b); return err }}
}

func hostileQuery(name, query, refuse string) hostile {
	r := &http.Request{Method: "GET", URL: &url.URL{Path: "/orders", RawQuery: query}, Header: http.Header{}}
	return hostile{name, len(query), refuse, func() error { _, _, err := decodeListOrdersRequest(r, nil); return err }}
}

func hostileCookies(name, cookie, refuse string) hostile {
	r := &http.Request{Method: "POST", URL: &url.URL{Path: "/x"}, Header: http.Header{"Content-Type": {"application/json"}, "Cookie": {cookie}}}
	r.SetPathValue("account", "acme")
	b := []byte(`{"quantity":1,"amount":5,"currency":"EUR"}`)
	return hostile{name, len(cookie) + len(b), refuse, func() error { _, _, err := decodeCreateOrderRequest(r, b); return err }}
}

func hostileMultipart(name string, parts [][2]string, refuse string) hostile {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if len(parts) == 0 || !strings.HasPrefix(parts[0][0], "details[") {
		w.WriteField("details", `{"kind":"memo"}`)
	}
	fw, _ := w.CreateFormFile("file", "a.txt")
	fw.Write([]byte("hello"))
	for _, p := range parts {
		w.WriteField(p[0], p[1])
	}
	w.Close()
	body := buf.Bytes()
	r := &http.Request{Method: "POST", URL: &url.URL{Path: "/x"}, Header: http.Header{"Content-Type": {w.FormDataContentType()}}}
	r.SetPathValue("account", "acme")
	return hostile{name, len(body), refuse, func() error {
		_, q, err := decodeCreateUploadRequest(r, bytes.NewReader(body))
		q.Close()
		return err
	}}
}

func hostileInputs() []hostile {
	levels := 80000 // 240 KB of [a]
	many := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
		}
		return b.String()
	}
	var parts, deepParts [][2]string
	for i := range 998 {
		parts = append(parts, [2]string{fmt.Sprintf("x%d", i), "1"})
	}
	for i := range 300 {
		deepParts = append(deepParts, [2]string{fmt.Sprintf("details[z%d]%s", i, strings.Repeat("[a]", 29)), "1"})
	}
	return []hostile{
		hostileForm("form: one name nested 80000 levels", "quantity=1&amount=5&currency=EUR&deep"+strings.Repeat("[a]", levels)+"=1", "maxDepth"),
		hostileForm("form: 80000 fields", strings.Repeat("a=1&", 80000), "maxFields"),
		hostileForm("form: 997 undeclared members", "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1"+many(996, func(i int) string { return fmt.Sprintf("&items[0][x%d]=1", i) }), ""),
		hostileForm("form: 390 names of 27 levels", "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1"+many(390, func(i int) string { return fmt.Sprintf("&items[0][z%d]%s=1", i, strings.Repeat("[a]", 24)) }), ""),
		hostileForm("form: 400 names of 27 levels", "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1"+many(400, func(i int) string { return fmt.Sprintf("&items[0][z%d]%s=1", i, strings.Repeat("[a]", 24)) }), "maxValues"),
		hostileForm("form: 1000 single-letter levels", "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1"+many(995, func(i int) string { return fmt.Sprintf("&items[0][%d]%s=1", i, strings.Repeat("[a]", 8)) }), ""),
		hostileJSON("JSON: arrays nested 120000 levels", strings.Repeat("[", 120000)+strings.Repeat("]", 120000), "maxDepth"),
		hostileJSON("JSON: 9992 zeros", `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","zz":[`+strings.Repeat("0,", 9991)+`0]}]}`, ""),
		hostileJSON("JSON: 100000 zeros", `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","zz":[`+strings.Repeat("0,", 99999)+`0]}]}`, "maxValues"),
		hostileJSON("JSON: 3300 empty objects", `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","zz":[`+strings.Repeat("{},", 3300)+`{}]}]}`, ""),
		hostileQuery("deepObject: one name nested 80000 levels", "filter[zz]"+strings.Repeat("[a]", levels)+"=1", "maxDepth"),
		hostileQuery("query: 9000 parameters", strings.Repeat("x=1&", 9000), "maxFields"),
		hostileCookies("cookies: 9000", "session=s"+strings.Repeat("; c=1", 9000), "maxFields"),
		hostileMultipart("multipart: 1000 parts", parts, ""),
		hostileMultipart("multipart: 300 names of 32 levels", deepParts, ""),
		hostileMultipart("multipart: one name nested 80000 levels", [][2]string{{"details[zz]" + strings.Repeat("[a]", levels), "1"}}, "maxDepth"),
	}
}

// allocated returns the bytes f allocates, the mean of runs runs.
func allocated(runs int, f func()) float64 {
	var a, b runtime.MemStats
	f() // warm up: schema tables compiled once
	runtime.GC()
	runtime.ReadMemStats(&a)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&b)
	return float64(b.TotalAlloc-a.TotalAlloc) / float64(runs)
}

// maxBytesPerByte bounds what decoding any of the hostile inputs may
// allocate per byte of input. Measured: see docs/requests.md.
const maxBytesPerByte = 64

// TestHostileInputMemory: decoding hostile input within and past the
// limits allocates at most a small multiple of its size (and it is
// refused by the limit it breaks). Allocation is counted by the runtime
// (runtime.MemStats.TotalAlloc), not timed.
func TestHostileInputMemory(t *testing.T) {
	for _, h := range hostileInputs() {
		var err error
		perByte := allocated(10, func() { err = h.decode() }) / float64(h.size)
		t.Logf("%-45s %8d bytes in, %6.1f bytes allocated per byte, %v", h.name, h.size, perByte, err)
		switch {
		case h.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", h.name, err)
		case h.refuse != "" && (err == nil || !strings.Contains(fmt.Sprintf("%#v", err), `Rule:"`+h.refuse+`"`)):
			t.Errorf("%s: %v, want a %s violation", h.name, err, h.refuse)
		}
		if perByte > maxBytesPerByte && !raceEnabled {
			t.Errorf("%s: %.1f bytes allocated per byte of input, want at most %d", h.name, perByte, maxBytesPerByte)
		}
	}
}

// BenchmarkHostileInput reports the allocation per byte of input of each
// hostile shape (B/in-byte).
func BenchmarkHostileInput(b *testing.B) {
	for _, h := range hostileInputs() {
		b.Run(strings.NewReplacer(" ", "_", ":", "").Replace(h.name), func(b *testing.B) {
			b.SetBytes(int64(h.size))
			var a, c runtime.MemStats
			runtime.ReadMemStats(&a)
			for b.Loop() {
				h.decode()
			}
			runtime.ReadMemStats(&c)
			b.ReportMetric(float64(c.TotalAlloc-a.TotalAlloc)/float64(b.N)/float64(h.size), "B/in-byte")
		})
	}
}
