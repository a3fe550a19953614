package reqapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// rawRequest is a request as a client sends it, byte for byte.
type rawRequest struct {
	path        string // the path parameter: account of createOrder, id of updateNote
	query       string // the raw query
	header      string // header lines, "Name: value", separated by \n
	contentType string
	body        string
}

// decoded is what the generated decoder made of a rawRequest.
type decoded struct {
	raw   rawRequest
	fp    [32]byte
	typed any // the typed request, declared exclusions cleared
}

// fuzzOp is one generated operation, driven as its handler would be.
type fuzzOp struct {
	op     *idem.Operation
	param  string // the path wildcard; "" for none
	decode func(r *http.Request, body []byte) (typed any, canonical []byte, err error)
	check  func(t *testing.T, r *http.Request, typed any) // the oracles
	limits *idemimpl.Limits                               // the operation's x-request-limits; nil for the defaults
}

// opListOrders is listOrders as the fingerprint would see it, were it
// idempotent: a GET goes through no engine, but its decoder builds the same
// canonical form.
var opListOrders = idem.Operation{ID: "listOrders", Method: "GET", Pattern: "/orders"}

var fuzzOps = []fuzzOp{
	{op: &opCreateOrder, param: "account",
		decode: func(r *http.Request, body []byte) (any, []byte, error) {
			req, q, err := decodeCreateOrderRequest(r, body)
			if err != nil {
				return nil, nil, err
			}
			return req, q.Canonical(opCreateOrder.Policy.FingerprintExclude), nil
		},
		check: checkCreateOrder},
	{op: &opUpdateNote, param: "id",
		decode: func(r *http.Request, body []byte) (any, []byte, error) {
			req, q, err := decodeUpdateNoteRequest(r, body)
			if err != nil {
				return nil, nil, err
			}
			return req, q.Canonical(opUpdateNote.Policy.FingerprintExclude), nil
		},
		check: checkUpdateNote},
	{op: &opCreateUpload, param: "account",
		decode: func(r *http.Request, body []byte) (any, []byte, error) {
			req, q, err := decodeCreateUploadRequest(r, bytes.NewReader(body))
			defer q.Close()
			if err != nil {
				return nil, nil, err
			}
			// The file is compared by what the fingerprint covers; its
			// reader is gone with q.
			req.Body.File.Content = nil
			return req, q.Canonical(opCreateUpload.Policy.FingerprintExclude), nil
		},
		check: checkCreateUpload},
	{op: &opListOrders,
		decode: func(r *http.Request, _ []byte) (any, []byte, error) {
			req, q, err := decodeListOrdersRequest(r, nil)
			if err != nil {
				return nil, nil, err
			}
			return req, q.Canonical(nil), nil
		},
		check:  checkListOrders,
		limits: &limitsListOrders},
}

// defaultBoundary is the boundary of a multipart body whose Content-Type
// names none.
const defaultBoundary = "fuzzboundary"

// toMultipart writes a form's pairs (name=value&...) as the parts of a
// multipart/form-data body, in order; a name starting with @ is a file
// part (filename f.bin). ok is false when the form does not decode.
func toMultipart(form, boundary string) (string, bool) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if w.SetBoundary(boundary) != nil {
		return "", false
	}
	for pair := range strings.SplitSeq(form, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "", false
		}
		h := textproto.MIMEHeader{}
		if name, file := strings.CutPrefix(k, "@"); file {
			h.Set("Content-Disposition", fmt.Sprintf("form-data; name=%q; filename=\"f.bin\"", name))
			h.Set("Content-Type", "application/octet-stream")
		} else {
			h.Set("Content-Disposition", fmt.Sprintf("form-data; name=%q", k))
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			return "", false
		}
		pw.Write([]byte(v))
	}
	if w.Close() != nil {
		return "", false
	}
	return b.String(), true
}

// build makes the *http.Request net/http's server would hand the handler,
// or reports that the server (or the engine, before prepare) refuses it.
func (o *fuzzOp) build(rr rawRequest) (*http.Request, bool) {
	// net/http's ServeMux unescapes one path segment; the engine refuses a
	// path parameter or a query value that is not valid UTF-8 or holds a NUL
	// before prepare runs (idem's checkScope).
	if o.param != "" && (rr.path == "" || strings.ContainsAny(rr.path, "/\x00") || !utf8.ValidString(rr.path)) {
		return nil, false
	}
	if q, err := url.ParseQuery(rr.query); err == nil {
		for k, vs := range q {
			for _, v := range append(vs, k) {
				if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
					return nil, false
				}
			}
		}
	}
	if strings.ContainsAny(rr.query, " #\x00\r\n") {
		return nil, false // not a request line net/http reads
	}
	r := &http.Request{
		Method: o.op.Method,
		URL:    &url.URL{Path: "/x", RawQuery: rr.query},
		Header: http.Header{},
	}
	for line := range strings.SplitSeq(rr.header, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validHeaderName(name) {
			continue
		}
		value = strings.Trim(value, " \t")
		if !validHeaderValue(value) {
			return nil, false
		}
		r.Header.Add(name, value)
	}
	if rr.contentType != "" {
		if !validHeaderValue(rr.contentType) {
			return nil, false
		}
		r.Header.Set("Content-Type", rr.contentType)
	}
	if o.param != "" {
		r.SetPathValue(o.param, rr.path)
	}
	return r, true
}

// validHeaderName and validHeaderValue are what net/http's server accepts
// in a request's header (RFC 9110 tokens; field values without CTLs but
// tab, obs-text allowed).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// run decodes rr as the generated handler does and fingerprints it as the
// engine does; ok is false when the request is refused.
func (o *fuzzOp) run(t *testing.T, rr rawRequest) (decoded, bool) {
	body := rr.body
	if essence, params, err := mime.ParseMediaType(rr.contentType); err == nil && essence == "multipart/form-data" {
		boundary := cmp.Or(params["boundary"], defaultBoundary)
		var ok bool
		if body, ok = toMultipart(rr.body, boundary); !ok {
			return decoded{}, false
		}
		rr.contentType = "multipart/form-data; boundary=" + boundary
	}
	r, ok := o.build(rr)
	if !ok {
		return decoded{}, false
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	typed, canonical, err := o.decode(r, []byte(body))
	runtime.ReadMemStats(&after)
	// Bounded allocation: decoding costs at most maxBytesPerByte (with
	// the JSON reader's stacks, which the pool may have dropped, twice
	// that) per byte of input, plus a constant.
	in := len(rr.path) + len(rr.query) + len(rr.header) + len(rr.contentType) + len(body)
	if alloc := after.TotalAlloc - before.TotalAlloc; !raceEnabled && alloc > uint64(2*maxBytesPerByte*in+256<<10) {
		t.Errorf("%+v: decoding %d bytes allocated %d bytes", rr, in, alloc)
	}
	if err != nil {
		if !idem.IsRequestError(err) {
			t.Fatalf("%+v: decoding failed with an error that is not the client's: %v", rr, err)
		}
		return decoded{}, false
	}
	// What decodes nests no deeper than the operation's maxDepth: the
	// canonical form puts a body one level down ({"body": ...}) and a
	// parameter two ({"query": {"filter": ...}}).
	limit := 2 + defaultMaxDepth
	if o.limits != nil {
		limit = 2 + o.limits.MaxDepth
	}
	if d := nesting(canonical); d > limit {
		t.Errorf("%+v: decoded to a canonical form %d levels deep, past the limit %d", rr, d, limit)
	}
	if !json.Valid(canonical) || !utf8.Valid(canonical) {
		t.Fatalf("%+v: canonical form is not valid JSON: %q", rr, canonical)
	}
	o.check(t, r, typed)
	if m, _, err := mime.ParseMediaType(rr.contentType); rr.body != "" && (rr.contentType == "" || err == nil && strings.HasSuffix(m, "json")) {
		sentAsDecoded(t, rr.body, typed)
	}
	return decoded{raw: rr, fp: idem.FingerprintCanonical(o.op.Method, o.op.Pattern, canonical), typed: withoutExclusions(typed)}, true
}

// withoutExclusions clears what the operation's fingerprint leaves out
// (declared exclusions aside, equal fingerprints mean equal requests).
func withoutExclusions(typed any) any {
	switch req := typed.(type) {
	case CreateOrderRequest:
		req.XRequestID = nil
		if req.Body.Metadata != nil {
			m := maps.Clone(req.Body.Metadata)
			delete(m, "clientSentAt")
			req.Body.Metadata = m
		}
		return req
	}
	return typed
}

// defaultMaxDepth is the maxDepth docs/requests.md gives, written out
// rather than read from idemimpl.DefaultLimits, which it checks.
const defaultMaxDepth = 32

// nesting is how deep the JSON text b nests (0 for a scalar).
func nesting(b []byte) int {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	deepest := 0
	for {
		if _, err := d.ReadToken(); err != nil {
			return deepest
		}
		deepest = max(deepest, d.StackDepth())
	}
}

// FuzzGeneratedRequests drives the generated decoders of createOrder (JSON
// and form bodies, path, query, deepObject, header and cookie parameters,
// fingerprint exclusions), updateNote (merge patch), createUpload
// (multipart: the body is written as a form, name=value&@file=content, and
// sent as parts) and listOrders (a deepObject GET with x-request-limits)
// with two requests and respellings of the first, and checks issue 11's
// invariant:
//
//   - two requests with equal fingerprints decode to equal typed requests,
//     declared exclusions aside;
//   - every request that decodes satisfies its schema, as an independent
//     validator (kin-openapi's) judges the typed request marshalled back
//     (the property idemgen.yaml's validation.skip names aside);
//   - the handler sees a header value and the members of a JSON body as
//     they were sent;
//   - a respelling of a request that decodes (member order, white space,
//     escapes, number spelling, form order and percent-encoding, part
//     order and boundary, cookie order, media type case and charset=utf-8)
//     has the same fingerprint;
//   - decoding allocates a bounded multiple of the input's size (issue 20),
//     and returns: a name nested past the limits is refused, not recursed
//     into; what decodes nests no deeper than the operation's maxDepth.
//
// The seeds are the counterexamples of the issue. Run it with
//
//	go test ./runtime/idemimpl/internal/reqapi -run '^$' -fuzz FuzzGeneratedRequests -fuzztime 10m
func FuzzGeneratedRequests(f *testing.F) {
	const js, form = "application/json", "application/x-www-form-urlencoded"
	order := func(amount string) string { return `{"quantity":1,"amount":` + amount + `,"currency":"EUR"}` }
	seed := func(op uint8, a, b rawRequest) {
		f.Add(op, a.path, a.query, a.header, a.contentType, a.body, b.path, b.query, b.header, b.contentType, b.body)
	}
	// 1. case-variant and duplicate members
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"AMOUNT":2,"currency":"EUR"}`},
		rawRequest{"acme", "", "", js, `{"AMOUNT":2,"quantity":1,"amount":1,"currency":"EUR"}`})
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"currency":"EUR","items":[{"sku":"AB-1","COUNT":5}]}`},
		rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"currency":"EUR","items":[{"sku":"AB-1","Label":"x","other":1}]}`})
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"amount":2,"currency":"EUR"}`},
		rawRequest{"acme", "", "", js, `{"quantity":1,"Amount":2,"currency":"EUR"}`})
	// 2. integers past 2^53
	seed(0, rawRequest{"acme", "", "", js, order("9007199254740993")}, rawRequest{"acme", "", "", js, order("9007199254740992")})
	seed(0, rawRequest{"acme", "", "", js, order("9007199254740993.0")}, rawRequest{"acme", "", "", js, order("9.007199254740993e15")})
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":1,"amount":5,"currency":"EUR","attributes":{"n":9007199254740993},"extra":[9007199254740993]}`},
		rawRequest{"acme", "", "", js, `{"quantity":1,"amount":5,"currency":"EUR","attributes":{"n":9007199254740992},"extra":[9007199254740992.0]}`})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=9007199254740993&currency=EUR"},
		rawRequest{"acme", "", "", form, "quantity=1&amount=9223372036854775808&currency=EUR"})
	// 3. header and cookie parameters; an excluded header
	seed(0, rawRequest{"acme", "", "X-Account: alice\nCookie: session=s1; other=x", js, order("5")},
		rawRequest{"acme", "", "X-Account: bob\nCookie: other=x; session=s1", js, order("5")})
	seed(0, rawRequest{"acme", "", "X-Account: alice\nX-Request-Id: r1", js, order("5")},
		rawRequest{"acme", "", "X-Account: alice\nX-Request-Id: r2\nX-Account: carol", js, order("5")})
	seed(0, rawRequest{"acme", "", "Cookie: session=s1\nCookie: session=s2", js, order("5")},
		rawRequest{"acme", "", "Cookie: session=s1,s2", js, order("5")})
	// text that is not UTF-8 (found by this target: it became U+FFFD)
	seed(0, rawRequest{"acme", "", "X-Account: ali\xe7e", js, order("5")}, rawRequest{"acme", "", "X-Account: ali\xe8e", js, order("5")})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&note=%E7"}, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&note=%E8"})
	// 4. forms: order, percent-encoding, exclusions, arrays and maps
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=usd"},
		rawRequest{"acme", "", "", form, "currency=%75sd&amount=5&quantity=1"})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&metadata[clientSentAt]=t1&metadata[order]=6735"},
		rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&metadata%5BclientSentAt%5D=t2&metadata[order]=6735"})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[1][sku]=AB-2&items[1][count]=3"},
		rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&items[1][sku]=AB-1&items[0][sku]=AB-2&items[0][count]=3"})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&note=a+b&price=1.50"},
		rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&note=a%20b&price=1.5"})
	// query parameters: form arrays, deepObject, defaults
	seed(0, rawRequest{"acme", "tag=a&tag=b&window[from]=1&window[to]=2", "", js, order("5")},
		rawRequest{"acme", "window[to]=2&tag=a&window[from]=1&tag=b&dryRun=false", "", js, order("5")})
	// 5. media types
	seed(0, rawRequest{"acme", "", "", js, order("7")}, rawRequest{"acme", "", "", "application/json; charset=utf-8", order("7")})
	seed(0, rawRequest{"acme", "", "", "", order("7")}, rawRequest{"acme", "", "", "text/plain", order("7")})
	seed(0, rawRequest{"acme", "", "", "application/xml", order("7")}, rawRequest{"acme", "", "", "application/json; charset=iso-8859-1", order("7")})
	// 6. schema constraints
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":0,"amount":1,"currency":"EUR","evil":true}`},
		rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"currency":"EUR","items":[],"note":"` + strings.Repeat("é", 21) + `"}`})
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"currency":"EUR","items":[{"sku":"AB-1"},{"sku":"AB-1","count":1}]}`},
		rawRequest{"acme", "", "", js, `{"quantity":1,"amount":1,"currency":"EUR","price":0.015}`})
	// 7. merge patch: absent, null and a value
	seed(1, rawRequest{"1", "", "", "application/merge-patch+json", `{"note":null}`}, rawRequest{"1", "", "", "application/merge-patch+json", `{}`})
	seed(1, rawRequest{"1", "", "", "application/merge-patch+json", `{"note":"x","title":"t"}`}, rawRequest{"01", "", "", "", `{"title":"t","note":"x"}`})

	// 8. issue 20: names nested past the limits (refused, not recursed
	// into), at them, and a multipart upload and a deepObject GET
	deep := func(n int) string { return strings.Repeat("[a]", n) }
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&deep" + deep(2000) + "=1"},
		rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[0][zz]" + deep(2000) + "=1"})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[0][zz]" + deep(29) + "=1"},
		rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[0][zz]" + deep(30) + "=1"})
	seed(0, rawRequest{"acme", "", "", js, `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","zz":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}]}`},
		rawRequest{"acme", "", "", form, strings.Repeat("a=1&", 1001)})
	// kept values (attributes: additionalProperties: true; extra: {}) past
	// the limit and at it
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&attributes" + deep(40) + "=1"},
		rawRequest{"acme", "", "", js, `{"quantity":1,"amount":5,"currency":"EUR","extra":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`})
	seed(0, rawRequest{"acme", "", "", form, "quantity=1&amount=5&currency=EUR&attributes" + deep(31) + "=1"},
		rawRequest{"acme", "", "", js, `{"quantity":1,"amount":5,"currency":"EUR","extra":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`})
	const mp = "multipart/form-data"
	upload := "@file=hello&details=" + url.QueryEscape(`{"kind":"memo","pages":2}`) + "&title=t"
	seed(2, rawRequest{"acme", "", "", mp, upload + "&note=a"}, rawRequest{"acme", "", "", mp, upload + "&note=b"})
	seed(2, rawRequest{"acme", "", "", mp, upload + "&lines=" + url.QueryEscape(`{"sku":"AB-1"}`) + "&lines=" + url.QueryEscape(`{"sku":"AB-2","count":2}`)},
		rawRequest{"acme", "", "", mp, "@file=hello&details[kind]=memo&details[zz]" + deep(2000) + "=1"})
	seed(2, rawRequest{"acme", "", "", mp, "@file=hello&details[kind]=memo&details[pages]=3&@extra=x"},
		rawRequest{"acme", "", "", "multipart/form-data; boundary=b2", "@file=hello&details[kind]=memo&details[pages]=03"})
	seed(3, rawRequest{"", "filter[account]=acme&filter[amount][gte]=1&filter[amount][lte]=9", "", "", ""},
		rawRequest{"", "filter[zz]" + deep(2000) + "=1", "", "", ""})
	seed(3, rawRequest{"", "filter[amount][gte]=1" + strings.Repeat("&x=1", 60), "", "", ""}, rawRequest{"", "filter[amount]=1", "", "", ""})

	f.Fuzz(func(t *testing.T, op uint8, p1, q1, h1, c1, b1, p2, q2, h2, c2, b2 string) {
		o := &fuzzOps[int(op)%len(fuzzOps)]
		a := rawRequest{p1, q1, h1, c1, b1}
		var got []decoded
		da, aok := o.run(t, a)
		if aok {
			got = append(got, da)
		}
		if db, ok := o.run(t, rawRequest{p2, q2, h2, c2, b2}); ok {
			got = append(got, db)
		}
		for _, v := range respellings(a) {
			dv, ok := o.run(t, v)
			if aok && (!ok || dv.fp != da.fp) {
				t.Errorf("a respelling of a request has another fingerprint (or is refused: %v):\n%+v\n%+v", !ok, a, v)
			}
			if ok {
				got = append(got, dv)
			}
		}
		for _, v := range alterations(a) {
			if dv, ok := o.run(t, v); ok {
				got = append(got, dv)
			}
		}
		for i := range got {
			for j := i + 1; j < len(got); j++ {
				if got[i].fp == got[j].fp && !reflect.DeepEqual(got[i].typed, got[j].typed) {
					t.Errorf("equal fingerprints, different typed requests:\n%+v\n  %#v\n%+v\n  %#v", got[i].raw, got[i].typed, got[j].raw, got[j].typed)
				}
			}
		}
	})
}

// respellings are other spellings of the same request.
func respellings(rr rawRequest) []rawRequest {
	var out []rawRequest
	essence, params, err := mime.ParseMediaType(rr.contentType)
	if err == nil && len(params) == 0 {
		v := rr
		v.contentType = strings.ToUpper(essence) + "; charset=UTF-8"
		out = append(out, v)
	}
	if rr.contentType == "" || err == nil && (essence == "application/json" || essence == "application/merge-patch+json") {
		if body, ok := respellJSON(rr.body); ok {
			v := rr
			v.body = body
			out = append(out, v)
		}
	}
	if err == nil && (essence == "application/x-www-form-urlencoded" || essence == "multipart/form-data") {
		if body, ok := respellForm(rr.body, true); ok {
			v := rr
			v.body = body
			out = append(out, v)
		}
	}
	if err == nil && essence == "multipart/form-data" {
		v := rr
		v.contentType = "multipart/form-data; boundary=another-boundary"
		out = append(out, v)
	}
	if q, ok := respellForm(rr.query, false); ok && rr.query != "" {
		v := rr
		v.query = q
		out = append(out, v)
	}
	// X-Request-Id is excluded from createOrder's fingerprint by name.
	v := rr
	v.header = "X-Request-Id: " + fmt.Sprint(len(rr.header)) + "\n" + rr.header
	out = append(out, v)
	if h, ok := reorderCookies(rr.header); ok {
		v := rr
		v.header = h
		out = append(out, v)
	}
	return out
}

// alterations are requests a small step away from rr that a careless
// canonical form might take for it: a member name in another case, a
// member given twice, an integer one larger, another header value.
func alterations(rr rawRequest) []rawRequest {
	var out []rawRequest
	add := func(f func(*rawRequest)) {
		v := rr
		f(&v)
		if v != rr {
			out = append(out, v)
		}
	}
	add(func(v *rawRequest) { v.body = strings.Replace(v.body, `"amount"`, `"Amount"`, 1) })
	add(func(v *rawRequest) { v.body = strings.Replace(v.body, `{`, `{"amount":2,`, 1) })
	add(func(v *rawRequest) { v.body = strings.Replace(v.body, `3,`, `2,`, 1) })
	add(func(v *rawRequest) { v.body = strings.Replace(v.body, "amount=", "AMOUNT=", 1) })
	add(func(v *rawRequest) { v.body = strings.Replace(v.body, "5", "%35", 1) })
	add(func(v *rawRequest) { v.header = strings.Replace(v.header, "alice", "bob", 1) })
	add(func(v *rawRequest) { v.header += "\nCookie: session=another" })
	add(func(v *rawRequest) { v.query += "&tag=another" })
	return out
}

// respellJSON writes body again with its members in reverse order, white
// space between tokens, every string character escaped and every number
// with an exponent; ok is false when body is not one strict JSON text.
func respellJSON(body string) (string, bool) {
	dec := jsontext.NewDecoder(strings.NewReader(body))
	var b strings.Builder
	if err := respellValue(dec, &b); err != nil {
		return "", false
	}
	if _, err := dec.ReadToken(); err == nil {
		return "", false
	}
	return b.String(), true
}

func respellValue(dec *jsontext.Decoder, b *strings.Builder) error {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		var members []string
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return err
			}
			var m strings.Builder
			escapeString(&m, name.String())
			m.WriteString(" :\n")
			if err := respellValue(dec, &m); err != nil {
				return err
			}
			members = append(members, m.String())
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		slices.Reverse(members)
		b.WriteString("{ " + strings.Join(members, " ,\t") + " }")
		return nil
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		var items []string
		for dec.PeekKind() != ']' {
			var m strings.Builder
			if err := respellValue(dec, &m); err != nil {
				return err
			}
			items = append(items, m.String())
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		b.WriteString("[ " + strings.Join(items, " , ") + " ]")
		return nil
	case '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		escapeString(b, tok.String())
		return nil
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	s := string(raw)
	if s[0] == '-' || s[0] >= '0' && s[0] <= '9' {
		if !strings.ContainsAny(s, "eE") {
			s += "E+0"
		}
	}
	b.WriteString(s)
	return nil
}

// escapeString writes s as a JSON string with every character escaped.
func escapeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xffff {
			r -= 0x10000
			fmt.Fprintf(b, `\u%04X\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			continue
		}
		fmt.Fprintf(b, `\u%04x`, r)
	}
	b.WriteByte('"')
}

// respellForm writes a form or query again with its pairs sorted by name
// (pairs of one name keep their order, which is an array's) and every byte
// percent-encoded; ok is false when it does not decode.
func respellForm(s string, body bool) (string, bool) {
	type pair struct{ k, v string }
	var pairs []pair
	for p := range strings.SplitSeq(s, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "", false
		}
		pairs = append(pairs, pair{k, v})
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
	var b strings.Builder
	enc := func(s string) {
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] == ' ' && body:
				b.WriteByte('+')
			case i%2 == 0:
				fmt.Fprintf(&b, "%%%02X", s[i])
			default:
				fmt.Fprintf(&b, "%%%02x", s[i])
			}
		}
	}
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		enc(p.k)
		b.WriteByte('=')
		enc(p.v)
	}
	return b.String(), true
}

// reorderCookies reverses the cookies of each Cookie header line whose
// cookie names are all different.
func reorderCookies(header string) (string, bool) {
	lines := strings.Split(header, "\n")
	changed := false
	for i, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(name, "Cookie") {
			continue
		}
		parts := strings.Split(strings.TrimSpace(value), ";")
		seen := map[string]bool{}
		for j := range parts {
			parts[j] = strings.TrimSpace(parts[j])
			n, _, _ := strings.Cut(parts[j], "=")
			if seen[n] {
				return "", false
			}
			seen[n] = true
		}
		if len(parts) > 1 {
			slices.Reverse(parts)
			lines[i] = name + ": " + strings.Join(parts, "; ")
			changed = true
		}
	}
	return strings.Join(lines, "\n"), changed
}

// The schema oracle: kin-openapi's validator, independent of ours, judges
// the typed request marshalled back to JSON against openapi.yaml.
var (
	specOnce sync.Once
	spec     *openapi3.T
	specErr  error
)

func loadSpec(t *testing.T) *openapi3.T {
	specOnce.Do(func() {
		spec, specErr = openapi3.NewLoader().LoadFromFile("openapi.yaml")
	})
	if specErr != nil {
		t.Fatal(specErr)
	}
	return spec
}

// conform fails t unless v, marshalled to JSON, satisfies schema.
func conform(t *testing.T, what string, schema *openapi3.Schema, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: marshal: %v", what, err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.VisitJSON(doc, openapi3.MultiErrors()); err != nil {
		t.Errorf("%s %s decoded, but does not satisfy its schema: %v", what, b, err)
	}
}

func paramSchemas(t *testing.T, path, method string) map[string]*openapi3.Schema {
	op := loadSpec(t).Paths.Find(path).GetOperation(method)
	out := map[string]*openapi3.Schema{}
	for _, p := range op.Parameters {
		out[p.Value.Name] = p.Value.Schema.Value
	}
	return out
}

func checkCreateOrder(t *testing.T, r *http.Request, typed any) {
	req := typed.(CreateOrderRequest)
	// The handler sees what was sent: a header value is not respelt (an
	// encoding other than UTF-8 turned into U+FFFD, say).
	if vs := r.Header.Values("X-Account"); len(vs) == 1 && (req.XAccount == nil || *req.XAccount != vs[0]) {
		t.Errorf("X-Account: %q sent, the handler sees %v", vs[0], req.XAccount)
	}
	ps := paramSchemas(t, "/accounts/{account}/orders", "POST")
	conform(t, "path parameter account", ps["account"], req.Account)
	for name, v := range map[string]any{"dryRun": req.DryRun, "tag": req.Tag, "window": req.Window,
		"X-Account": req.XAccount, "X-Request-Id": req.XRequestID, "session": req.Session} {
		if !reflect.ValueOf(v).IsNil() {
			conform(t, "parameter "+name, ps[name], v)
		}
	}
	body := req.Body
	body.Comment = nil // validation.skip in idemgen.yaml
	conform(t, "body", loadSpec(t).Components.Schemas["Order"].Value, body)
}

func checkCreateUpload(t *testing.T, _ *http.Request, typed any) {
	req := typed.(CreateUploadRequest)
	conform(t, "path parameter account", paramSchemas(t, "/accounts/{account}/uploads", "POST")["account"], req.Account)
	conform(t, "body", loadSpec(t).Components.Schemas["Upload"].Value, req.Body)
}

func checkListOrders(t *testing.T, _ *http.Request, typed any) {
	req := typed.(ListOrdersRequest)
	if req.Filter != nil {
		conform(t, "parameter filter", paramSchemas(t, "/orders", "GET")["filter"], req.Filter)
	}
}

func checkUpdateNote(t *testing.T, _ *http.Request, typed any) {
	req := typed.(UpdateNoteRequest)
	conform(t, "path parameter id", paramSchemas(t, "/notes/{id}", "PATCH")["id"], req.ID)
	conform(t, "body", loadSpec(t).Components.Schemas["NotePatch"].Value, req.Body)
}

// sentAsDecoded checks a JSON body against the typed request's body
// marshalled back, both read by encoding/json with exact numbers: every
// member the handler sees was sent under that name with that value, but
// for defaults (an item's count); undeclared members may be dropped. It
// catches what the fingerprint cannot: a value changed the same way in
// the canonical form and the typed request (an integer rounded through a
// double, a member taken under another name).
func sentAsDecoded(t *testing.T, body string, typed any) {
	t.Helper()
	var v any
	switch req := typed.(type) {
	case CreateOrderRequest:
		v = req.Body
	case UpdateNoteRequest:
		v = req.Body
	default:
		return // no JSON body (listOrders: found by this target)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sent, seen := exactJSON(t, []byte(body)), exactJSON(t, b)
	if err := subsetOf(seen, sent, ""); err != nil {
		t.Errorf("the handler sees %s of %s: %v", b, body, err)
	}
}

func exactJSON(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// subsetOf reports where seen is not part of sent.
func subsetOf(seen, sent any, at string) error {
	switch x := seen.(type) {
	case map[string]any:
		y, ok := sent.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an object where %v was sent", at, sent)
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				if k == "count" && strings.HasPrefix(at, "/items/") && xv == json.Number("1") {
					continue // the default
				}
				return fmt.Errorf("%s/%s: not sent", at, k)
			}
			if err := subsetOf(xv, yv, at+"/"+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		y, ok := sent.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Errorf("%s: %v where %v was sent", at, seen, sent)
		}
		for i := range x {
			if err := subsetOf(x[i], y[i], fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		y, ok := sent.(json.Number)
		a, aok := new(big.Rat).SetString(string(x))
		b, bok := new(big.Rat).SetString(string(y))
		if !ok || !aok || !bok {
			return fmt.Errorf("%s: %v where %v was sent", at, seen, sent)
		}
		if a.Cmp(b) != 0 {
			// An integer an int64 holds is exact; any other number is the
			// nearest double to what was sent (which may be an integer:
			// 9007199254740992.1 is 9007199254740992, found by this
			// target).
			fa, _ := a.Float64()
			fb, _ := b.Float64()
			if b.IsInt() && b.Num().IsInt64() || fa != fb {
				return fmt.Errorf("%s: %v where %v was sent", at, seen, sent)
			}
		}
		return nil
	}
	if !reflect.DeepEqual(seen, sent) {
		return fmt.Errorf("%s: %v where %v was sent", at, seen, sent)
	}
	return nil
}
