package reqapi_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// deep is a bracket path of n levels: [a][a]...[a].
func deep(n int) string { return strings.Repeat("[a]", n) }

// part is one part of a multipart body: a name, an optional filename, the
// content.
type part struct{ name, filename, content string }

// multipartBody encodes parts as multipart/form-data; it returns the body
// and its Content-Type.
func multipartBody(t *testing.T, parts ...part) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf("form-data; name=%q", p.name)
		if p.filename != "" {
			cd += fmt.Sprintf("; filename=%q", p.filename)
			h.Set("Content-Type", "application/octet-stream")
		}
		h.Set("Content-Disposition", cd)
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(pw, p.content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String(), w.FormDataContentType()
}

// upload is a valid createUpload request with extra parts.
func upload(t *testing.T, extra ...part) (string, string) {
	t.Helper()
	return multipartBody(t, append([]part{{"file", "a.txt", "hello"}, {"details", "", `{"kind":"memo"}`}}, extra...)...)
}

// get sends a GET without an idempotency key or a body.
func (s *stack) get(t *testing.T, path string) reply {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

// wantLimit checks a 400 whose one violation is rule at where, with a
// detail containing each of details.
func wantLimit(t *testing.T, r reply, in, where, rule string, details ...string) {
	t.Helper()
	wantInvalid(t, r, in, where, rule)
	_, vs := r.problem(t)
	for _, d := range details {
		if !strings.Contains(vs[0].Detail, d) {
			t.Errorf("detail %q lacks %q", vs[0].Detail, d)
		}
	}
}

// TestHostileNesting is issue 20's crash: a name nested 349,000 levels deep
// (a megabyte, under the default body and header limits) in a form body,
// below a member the schema does not declare, in a multipart part name and
// in a deepObject query parameter of a GET made the decoders recurse until
// the process died of a stack overflow. Each is refused at the level past
// the limit, before any tree is built, and the server goes on serving.
func TestHostileNesting(t *testing.T) {
	s := newStack(t)
	const levels = 349000
	const form = "application/x-www-form-urlencoded"
	path := "/accounts/acme/orders"
	body := "quantity=1&amount=5&currency=EUR&deep" + deep(levels) + "=1"
	if len(body) >= 1<<20 {
		t.Fatalf("the body is %d bytes, over the default limit", len(body))
	}
	wantLimit(t, s.order(t, "form name", path, key(), form, body), "body", "#", "maxDepth",
		`form name "deep[a][a][a][a][a][a][a…"`, "nests deeper than 32 levels")
	wantLimit(t, s.order(t, "undeclared member", path, key(), form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[0][zz]"+deep(levels)+"=1"),
		"body", "#", "maxDepth", `form name "items[0][zz][a][a][a][a]…"`, "nests deeper than 32 levels")
	mp, ct := upload(t, part{"details[zz]" + deep(levels), "", "1"})
	wantLimit(t, s.order(t, "multipart name", "/accounts/acme/uploads", key(), ct, mp), "body", "#", "maxDepth",
		`part name "details[zz][a][a][a][a][…"`, "nests deeper than 32 levels")
	wantLimit(t, s.get(t, "/orders?filter[zz]"+deep(levels)+"=1"), "query", "filter", "maxDepth",
		`name "filter[zz][a][a][a][a][a…"`, "nests deeper than 4 levels") // listOrders' x-request-limits

	// Just inside the limit, nothing is refused: 32 levels, counting the
	// body (form and multipart) or not (a deepObject parameter is its own
	// value). Item and Upload keep no undeclared members (zz).
	wantCreated(t, s.order(t, "32 levels", path, key(), form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[0][zz]"+deep(29)+"=1"), false)
	wantLimit(t, s.order(t, "33 levels", path, key(), form, "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[0][zz]"+deep(30)+"=1"),
		"body", "#", "maxDepth")
	mp, ct = multipartBody(t, part{"file", "a.txt", "hello"}, part{"details[kind]", "", "memo"}, part{"details[zz]" + deep(29), "", "1"})
	wantCreated(t, s.order(t, "multipart 32 levels", "/accounts/acme/uploads", key(), ct, mp), false)
	if r := s.get(t, "/orders?filter[amount][gte]=1&filter[account]=acme"); r.status != 200 {
		t.Fatalf("deepObject: %d %s", r.status, r.body)
	}
	// listOrders sets maxDepth: 4. A deepObject value of 5 levels:
	// filter[zz] and 4 more; of 4, it gets as far as the schema (which
	// declares no zz).
	wantLimit(t, s.get(t, "/orders?filter[zz]"+deep(4)+"=1"), "query", "filter", "maxDepth", "nests deeper than 4 levels")
	wantInvalid(t, s.get(t, "/orders?filter[zz]"+deep(3)+"=1"), "query", "#/zz"+"filter", "additionalProperties") // pointer, parameter

	// JSON has the same limit, counted the same way.
	item := func(n int) string {
		return `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","zz":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
	}
	wantCreated(t, s.order(t, "JSON 32 levels", path, key(), "application/json", item(29)), false)
	wantLimit(t, s.order(t, "JSON 33 levels", path, key(), "application/json", item(30)), "body", "#/items/0/zz"+strings.Repeat("/0", 29), "maxDepth",
		"nests deeper than 32 levels")
	s.noneLeft(t, 3, 2)
}

// TestFieldLimits: past 1000 name=value pairs in a form body (50 in the
// query string of listOrders, which sets x-request-limits), parts of a
// multipart body or cookies, and past 1024 bytes in a name, a request is
// refused before its fields are decoded; at the limit it is served.
func TestFieldLimits(t *testing.T) {
	s := newStack(t)
	const form = "application/x-www-form-urlencoded"
	path := "/accounts/acme/orders"
	// Item is open: undeclared members (x1, x2, ...) are dropped.
	fields := func(n int) string {
		var b strings.Builder
		b.WriteString("quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1")
		for i := 4; i < n; i++ {
			fmt.Fprintf(&b, "&items[0][x%d]=1", i)
		}
		return b.String()
	}
	wantCreated(t, s.order(t, "1000 fields", path, key(), form, fields(1000)), false)
	wantLimit(t, s.order(t, "1001 fields", path, key(), form, fields(1001)), "body", "#", "maxFields", "form has more than 1000 fields")

	name := func(n int) string { return "items[0][" + strings.Repeat("n", n-len("items[0][]")) + "]" }
	base := "quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&"
	wantCreated(t, s.order(t, "name of 1024 bytes", path, key(), form, base+name(1024)+"=1"), false)
	wantLimit(t, s.order(t, "name of 1025 bytes", path, key(), form, base+name(1025)+"=1"), "body", "#", "maxNameLength",
		`form name "items[0][nnnnnnnnnnnnnnn…" is longer than 1024 bytes`)

	parts := func(n int) (string, string) {
		var ps []part
		for i := 2; i < n; i++ {
			ps = append(ps, part{fmt.Sprintf("x%d", i), "", "1"})
		}
		return upload(t, ps...)
	}
	mp, ct := parts(1000)
	wantCreated(t, s.order(t, "1000 parts", "/accounts/acme/uploads", key(), ct, mp), false)
	mp, ct = parts(1001)
	wantLimit(t, s.order(t, "1001 parts", "/accounts/acme/uploads", key(), ct, mp), "body", "#", "maxFields", "multipart body has more than 1000 parts")

	query := func(n int) string {
		return "/orders?filter[account]=acme" + strings.Repeat("&x=1", n-1)
	}
	// listOrders sets maxFields: 50.
	if r := s.get(t, query(50)); r.status != 200 {
		t.Fatalf("50 query parameters: %d %s", r.status, r.body)
	}
	wantLimit(t, s.get(t, query(51)), "query", "", "maxFields", "the query string has more than 50 parameters")

	cookies := func(n int) string { return "session=s1" + strings.Repeat("; c=1", n-1) }
	wantCreated(t, s.order(t, "1000 cookies", path, key(), "application/json", order, "Cookie", cookies(1000)), false)
	wantLimit(t, s.order(t, "1001 cookies", path, key(), "application/json", order, "Cookie", cookies(1001)), "cookie", "session", "maxFields",
		"the request has more than 1000 cookies")
	s.noneLeft(t, 4, 3)
}

// TestValueLimit: a body or parameter holds at most 10000 values (objects,
// arrays and scalars), counted as it is parsed.
func TestValueLimit(t *testing.T) {
	s := newStack(t)
	path := "/accounts/acme/orders"
	// The body, its 3 scalars, items, one item and its sku: 7 values.
	zz := func(n int) string {
		return `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","zz":[` + strings.TrimSuffix(strings.Repeat("0,", n-1), ",") + `]}]}`
	}
	wantCreated(t, s.order(t, "10000 values", path, key(), "application/json", zz(10000-7)), false)
	wantLimit(t, s.order(t, "10001 values", path, key(), "application/json", zz(10001-7)), "body", "#", "maxValues", "holds more than 10000 values")
	// A form's values are counted as its names are typed: 400 names of 25
	// levels below items[0] are 10000 objects and scalars and more.
	form := func(n int) string {
		var b strings.Builder
		b.WriteString("quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1")
		for i := range n {
			fmt.Fprintf(&b, "&items[0][z%d]%s=1", i, deep(24))
		}
		return b.String()
	}
	wantCreated(t, s.order(t, "form of 9757 values", path, key(), "application/x-www-form-urlencoded", form(390)), false)
	wantLimit(t, s.order(t, "form of 10007 values", path, key(), "application/x-www-form-urlencoded", form(400)), "body", "#", "maxValues",
		"holds more than 10000 values")
	s.noneLeft(t, 2, 2)
}

// TestUndeclaredPartsDropped is issue 20's item 7a: a part the schema does
// not declare is dropped, as an undeclared member of a JSON or form body is
// (TestValidatedAsTheHandlerSeesIt): Upload declares properties but no
// additionalProperties, so its Go type has no field for others. The
// handler never sees it and the fingerprint does not cover it, so a retry
// with another undeclared part, a file included, is a replay, not a 409.
func TestUndeclaredPartsDropped(t *testing.T) {
	s := newStack(t)
	path := "/accounts/acme/uploads"
	k := key()
	mp, ct := upload(t, part{"title", "", "minutes"}, part{"note", "", "a"})
	first := s.order(t, "with note=a", path, k, ct, mp)
	wantCreated(t, first, false, `"title":"minutes"`)
	if bytes.Contains(first.body, []byte("note")) {
		t.Errorf("the handler saw the undeclared part: %s", first.body)
	}
	for name, extra := range map[string][]part{
		"note=b":             {{"note", "", "b"}},
		"no undeclared part": nil,
		"an undeclared file": {{"attachment", "x.bin", "some bytes"}},
		"bracket notation":   {{"note[a][b]", "", "1"}},
	} {
		mp, ct := upload(t, append([]part{{"title", "", "minutes"}}, extra...)...)
		wantCreated(t, s.order(t, name, path, k, ct, mp), true, `"title":"minutes"`)
	}
	// What the handler sees is the request: another title is another one.
	mp, ct = upload(t, part{"title", "", "notes"}, part{"note", "", "a"})
	wantConflict(t, s.order(t, "another title", path, k, ct, mp))
	if n := s.count(t, "uploads"); n != 1 {
		t.Fatalf("%d uploads, want 1", n)
	}
}
