package reqapi_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl/internal/reqapi"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// service stores every order it is asked for and answers with the typed
// request it received, marshalled back: what a replay shows is what the
// first request's handler saw.
type service struct{}

func (service) CreateOrder(ctx context.Context, tx pgx.Tx, req reqapi.CreateOrderRequest) (reqapi.CreateOrderResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders (account, amount, request) VALUES ($1, $2, $3)`, req.Account, req.Body.Amount, b); err != nil {
		return nil, err
	}
	var echo reqapi.Echo
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // amounts past 2^53 stay exact
	if err := dec.Decode(&echo); err != nil {
		return nil, err
	}
	return reqapi.CreateOrder201Response{Body: echo}, nil
}

// CreateUpload stores the upload as the handler saw it (the file as its
// digest and size) and answers with it.
func (service) CreateUpload(ctx context.Context, tx pgx.Tx, req reqapi.CreateUploadRequest) (reqapi.CreateUploadResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO uploads (account, request) VALUES ($1, $2)`, req.Account, b); err != nil {
		return nil, err
	}
	var echo reqapi.Echo
	if err := json.Unmarshal(b, &echo); err != nil {
		return nil, err
	}
	return reqapi.CreateUpload201Response{Body: echo}, nil
}

// CreateDocument decodes the text in the content coding the request names
// and answers with it.
func (service) CreateDocument(ctx context.Context, tx pgx.Tx, req reqapi.CreateDocumentRequest) (reqapi.CreateDocumentResponse, error) {
	text := req.Body
	coding := reqapi.CreateDocumentContentEncodingIdentity
	if req.ContentEncoding != nil {
		coding = *req.ContentEncoding
	}
	if coding == reqapi.CreateDocumentContentEncodingGzip {
		zr, err := gzip.NewReader(bytes.NewReader(req.Body))
		if err != nil {
			return nil, err
		}
		if text, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	return reqapi.CreateDocument201Response{Body: reqapi.Echo{"text": string(text), "coding": string(coding)}}, nil
}

// ListOrders answers with the filter it received.
func (service) ListOrders(ctx context.Context, req reqapi.ListOrdersRequest) (reqapi.ListOrdersResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var echo reqapi.Echo
	if err := json.Unmarshal(b, &echo); err != nil {
		return nil, err
	}
	return reqapi.ListOrders200Response{Body: echo}, nil
}

// UpdateNote applies a JSON merge patch (RFC 7396): an absent member leaves
// the column alone, null clears it.
func (service) UpdateNote(ctx context.Context, tx pgx.Tx, req reqapi.UpdateNoteRequest) (reqapi.UpdateNoteResponse, error) {
	n := reqapi.Note{ID: req.ID}
	var note *string
	if v, ok := req.Body.Note.Value(); ok {
		note = &v
	}
	title := req.Body.Title
	err := tx.QueryRow(ctx, `UPDATE notes SET
		title = coalesce($2, title),
		note = CASE WHEN $3 THEN $4 ELSE note END
		WHERE id = $1 RETURNING title, note`, req.ID, title, req.Body.Note.Present(), note).Scan(&n.Title, &n.Note)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errors.New("no such note")
	}
	if err != nil {
		return nil, err
	}
	return reqapi.UpdateNote200Response{Body: n}, nil
}

type stack struct {
	db  *pgtest.DB
	url string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{MaxConns: 4})
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE orders (account text NOT NULL, amount numeric NOT NULL, request jsonb NOT NULL);
		CREATE TABLE uploads (account text NOT NULL, request jsonb NOT NULL);
		CREATE TABLE notes (id bigint PRIMARY KEY, title text NOT NULL, note text);
		INSERT INTO notes VALUES (1, 'groceries', 'milk')`); err != nil {
		t.Fatal(err)
	}
	engine, err := idem.New(db, idem.Config{Operations: reqapi.IdempotentOperations})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reqapi.NewHandler(service{}, engine))
	t.Cleanup(srv.Close)
	return &stack{db: db, url: srv.URL}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) replayed() bool { return r.header.Get("Idempotent-Replayed") == "true" }

// problem returns the reason of a problem+json answer and its violations.
func (r reply) problem(t *testing.T) (reason string, violations []idemproblem.Violation) {
	t.Helper()
	var p struct {
		Reason string                  `json:"reason"`
		Errors []idemproblem.Violation `json:"errors"`
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") || json.Unmarshal(r.body, &p) != nil {
		t.Fatalf("not a problem: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	return p.Reason, p.Errors
}

// send sends a request as a client that controls every byte would: hdr
// lists header names and values ("Cookie", "session=s1", ...).
func (s *stack) send(t *testing.T, method, path, key, contentType, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Idempotency-Key", key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

func (s *stack) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *stack) order(t *testing.T, ctx, path, key, contentType, body string, hdr ...string) reply {
	t.Helper()
	r := s.send(t, "POST", path, key, contentType, body, hdr...)
	t.Logf("%s: %d replayed=%v %s", ctx, r.status, r.replayed(), r.body)
	return r
}

func wantCreated(t *testing.T, r reply, replayed bool, contains ...string) {
	t.Helper()
	if r.status != 201 || r.replayed() != replayed {
		t.Fatalf("got %d (replayed %v) %s; want 201 replayed=%v", r.status, r.replayed(), r.body, replayed)
	}
	for _, c := range contains {
		if !bytes.Contains(r.body, []byte(c)) {
			t.Errorf("response %s lacks %s", r.body, c)
		}
	}
}

func wantConflict(t *testing.T, r reply) {
	t.Helper()
	if r.status != 409 {
		t.Fatalf("got %d (replayed %v) %s; want 409", r.status, r.replayed(), r.body)
	}
	if reason, _ := r.problem(t); reason != idemproblem.ReasonConflict {
		t.Fatalf("409 reason %s, want CONFLICTING_IDEMPOTENT_REQUEST: %s", reason, r.body)
	}
}

// wantInvalid checks a 400 listing one violation with the rule and where.
func wantInvalid(t *testing.T, r reply, in, where, rule string) {
	t.Helper()
	if r.status != 400 {
		t.Fatalf("got %d %s; want 400", r.status, r.body)
	}
	reason, vs := r.problem(t)
	if reason != idemproblem.ReasonInvalidRequest || len(vs) != 1 || vs[0].In != in || vs[0].Pointer+vs[0].Parameter != where || vs[0].Rule != rule {
		t.Fatalf("400 %s; want one violation in %s at %s (%s)", r.body, in, where, rule)
	}
}

// noneLeft checks that refused requests left no record and no order.
func (s *stack) noneLeft(t *testing.T, records, orders int) {
	t.Helper()
	if n, m := s.count(t, "idem_records"), s.count(t, "orders"); n != records || m != orders {
		t.Fatalf("%d records and %d orders, want %d and %d: a refused request left something behind", n, m, records, orders)
	}
}

func key() string { return uuid.NewString() }

const order = `{"quantity":1,"amount":5,"currency":"EUR"}`

// TestIntegersPast2to53 is issue 11 case 2: 9007199254740993 and
// 9007199254740992 are one double apart from being the same; they are two
// requests and the handler sees each exactly, in every spelling and media
// type; an integer outside int64 is refused.
func TestIntegersPast2to53(t *testing.T) {
	s := newStack(t)
	k := key()
	big := func(n string) string { return `{"quantity":1,"amount":` + n + `,"currency":"EUR"}` }
	wantCreated(t, s.order(t, "first", "/accounts/acme/orders", k, "application/json", big("9007199254740993")), false, `"amount":9007199254740993`)
	wantConflict(t, s.order(t, "2^53", "/accounts/acme/orders", k, "application/json", big("9007199254740992")))
	for _, n := range []string{"9007199254740993.0", "9.007199254740993e15", "90071992547409930E-1"} {
		wantCreated(t, s.order(t, n, "/accounts/acme/orders", k, "application/json", big(n)), true, `"amount":9007199254740993`)
	}
	var amount string
	if err := s.db.QueryRow(context.Background(), `SELECT amount::text FROM orders`).Scan(&amount); err != nil || amount != "9007199254740993" {
		t.Fatalf("stored amount %s (%v)", amount, err)
	}
	// Forms are typed by the same rules.
	f := key()
	wantCreated(t, s.order(t, "form", "/accounts/acme/orders", f, "application/x-www-form-urlencoded", "quantity=1&currency=EUR&amount=9007199254740993"), false, `"amount":9007199254740993`)
	wantConflict(t, s.order(t, "form 2^53", "/accounts/acme/orders", f, "application/x-www-form-urlencoded", "quantity=1&currency=EUR&amount=9007199254740992"))
	// Outside int64: refused, nothing left behind.
	for _, r := range []reply{
		s.order(t, "2^63", "/accounts/acme/orders", key(), "application/json", big("9223372036854775808")),
		s.order(t, "form 2^63", "/accounts/acme/orders", key(), "application/x-www-form-urlencoded", "quantity=1&currency=EUR&amount=9223372036854775808"),
	} {
		wantInvalid(t, r, "body", "#/amount", "type")
	}
	s.noneLeft(t, 2, 2)
}

// TestUntypedIntegersPast2to53 is issue 20's item 6: in an untyped value
// (Order's attributes, additionalProperties: true, and extra, {}) a number
// reaches the handler as a json.Number with the digits the fingerprint
// covered, not as a float64 that rounds 9007199254740993 to
// 9007199254740992; what it stores and answers is what was sent.
func TestUntypedIntegersPast2to53(t *testing.T) {
	s := newStack(t)
	k := key()
	body := func(n string) string {
		return `{"quantity":1,"amount":5,"currency":"EUR","attributes":{"n":` + n + `,"list":[` + n + `,0.1]},"extra":` + n + `}`
	}
	wantCreated(t, s.order(t, "first", "/accounts/acme/orders", k, "application/json", body("9007199254740993")), false,
		`"n":9007199254740993`, `"list":[9007199254740993,0.1]`, `"extra":9007199254740993`)
	var n, extra string
	if err := s.db.QueryRow(context.Background(), `SELECT request->'Body'->'attributes'->>'n', request->'Body'->>'extra' FROM orders`).Scan(&n, &extra); err != nil ||
		n != "9007199254740993" || extra != "9007199254740993" {
		t.Fatalf("the handler stored attributes.n %s and extra %s (%v)", n, extra, err)
	}
	wantConflict(t, s.order(t, "2^53", "/accounts/acme/orders", k, "application/json", body("9007199254740992")))
	// Another spelling of the same integer is the same request.
	wantCreated(t, s.order(t, "spelt with an exponent", "/accounts/acme/orders", k, "application/json", body("9.007199254740993e15")), true,
		`"n":9007199254740993`)
	// Past int64 too (issue 35 item 8): two integers that round to one
	// float64 are two requests, and the handler gets every digit.
	big := key()
	wantCreated(t, s.order(t, "2^64+1", "/accounts/acme/orders", big, "application/json", body("18446744073709551617")), false,
		`"n":18446744073709551617`, `"extra":18446744073709551617`)
	wantConflict(t, s.order(t, "2^64", "/accounts/acme/orders", big, "application/json", body("18446744073709551616")))
	wantCreated(t, s.order(t, "2^64+1 with an exponent", "/accounts/acme/orders", big, "application/json", body("1.8446744073709551617e19")), true,
		`"n":18446744073709551617`)
	s.noneLeft(t, 2, 2)
}

// TestHeaderAndCookieParameters is issue 11 case 3: every declared header
// and cookie parameter is part of the fingerprint, except those the
// operation excludes by name (X-Request-Id here).
func TestHeaderAndCookieParameters(t *testing.T) {
	s := newStack(t)
	k := key()
	path := "/accounts/acme/orders"
	wantCreated(t, s.order(t, "alice", path, k, "application/json", order, "X-Account", "alice", "Cookie", "session=s1; theme=dark", "X-Request-Id", "r1"),
		false, `"XAccount":"alice"`, `"Session":"s1"`)
	wantConflict(t, s.order(t, "bob", path, k, "application/json", order, "X-Account", "bob", "Cookie", "session=s1", "X-Request-Id", "r1"))
	wantConflict(t, s.order(t, "no X-Account", path, k, "application/json", order, "Cookie", "session=s1"))
	wantConflict(t, s.order(t, "another session", path, k, "application/json", order, "X-Account", "alice", "Cookie", "session=s2"))
	wantConflict(t, s.order(t, "no session", path, k, "application/json", order, "X-Account", "alice"))
	wantConflict(t, s.order(t, "another account in the path", "/accounts/other/orders", k, "application/json", order, "X-Account", "alice", "Cookie", "session=s1"))
	wantConflict(t, s.order(t, "a query parameter", path+"?tag=x", k, "application/json", order, "X-Account", "alice", "Cookie", "session=s1"))
	// The excluded header, an undeclared cookie and the cookies' order are
	// not part of the request: a replay of alice's answer.
	wantCreated(t, s.order(t, "another request id", path, k, "application/json", order, "X-Account", "alice", "Cookie", "theme=light; session=s1", "X-Request-Id", "r2"),
		true, `"XAccount":"alice"`, `"XRequestID":"r1"`)
	wantCreated(t, s.order(t, "header name in lower case", path, k, "application/json", order, "x-account", "alice", "Cookie", "session=s1"), true)
	// A header value that is not UTF-8 would become U+FFFD in the typed
	// request: refused, as is a parameter that breaks its schema.
	wantInvalid(t, s.order(t, "latin-1 header", path, key(), "application/json", order, "X-Account", "ali\xe7e"), "header", "X-Account", "syntax")
	wantInvalid(t, s.order(t, "long cookie", path, key(), "application/json", order, "Cookie", "session="+strings.Repeat("s", 33)), "cookie", "session", "maxLength")
	s.noneLeft(t, 1, 1)
}

// TestFormBodies is issue 11 case 4: a form is canonicalised over its
// decoded structure (order of members and percent-encoding undone, array
// order kept), and fingerprint exclusions apply to it as to JSON.
func TestFormBodies(t *testing.T) {
	s := newStack(t)
	const form = "application/x-www-form-urlencoded"
	path := "/accounts/acme/orders"
	k := key()
	first := "quantity=1&amount=5&currency=usd&items[0][sku]=AB-1&items[1][sku]=CD-2&metadata[clientSentAt]=10:00&metadata[order]=6735"
	wantCreated(t, s.order(t, "first", path, k, form, first), false, `"currency":"usd"`, `"clientSentAt":"10:00"`)
	for name, body := range map[string]string{
		"members reordered":    "metadata[order]=6735&currency=usd&items[1][sku]=CD-2&amount=5&items[0][sku]=AB-1&quantity=1&metadata[clientSentAt]=10:00",
		"percent-encoded":      "quantity=1&amount=%35&currency=%75sd&items%5B0%5D%5Bsku%5D=AB-1&items[1][sku]=CD%2d2&metadata[clientSentAt]=10%3A00&metadata[order]=6735",
		"excluded member":      "quantity=1&amount=5&currency=usd&items[0][sku]=AB-1&items[1][sku]=CD-2&metadata[clientSentAt]=10:01&metadata[order]=6735",
		"default spelt out":    "quantity=1&amount=5&currency=usd&items[0][sku]=AB-1&items[0][count]=1&items[1][sku]=CD-2&metadata[clientSentAt]=10:00&metadata[order]=6735",
		"charset and no order": "metadata[order]=6735&quantity=1&amount=5&currency=usd&items[0][sku]=AB-1&items[1][sku]=CD-2",
	} {
		ct := form
		if name == "charset and no order" {
			ct += "; charset=UTF-8"
		}
		wantCreated(t, s.order(t, name, path, k, ct, body), true, `"clientSentAt":"10:00"`)
	}
	// Array order is meaning; so is the media type.
	wantConflict(t, s.order(t, "items swapped", path, k, form, "quantity=1&amount=5&currency=usd&items[0][sku]=CD-2&items[1][sku]=AB-1&metadata[order]=6735"))
	wantConflict(t, s.order(t, "same order as JSON", path, k, "application/json",
		`{"quantity":1,"amount":5,"currency":"usd","items":[{"sku":"AB-1"},{"sku":"CD-2"}],"metadata":{"order":"6735"}}`))
	// A form is decoded as strictly as JSON.
	for _, c := range []struct{ name, body, where, rule string }{
		{"scalar twice", "quantity=1&amount=5&amount=6&currency=usd", "#/amount", "syntax"},
		{"case variant", "quantity=1&amount=5&AMOUNT=6&currency=usd", "#/AMOUNT", "properties"},
		{"index gap", "quantity=1&amount=5&currency=usd&items[1][sku]=AB-1", "#/items", "syntax"},
		{"not UTF-8", "quantity=1&amount=5&currency=usd&note=%E7", "#", "syntax"},
		{"not a number", "quantity=one&amount=5&currency=usd", "#/quantity", "type"},
	} {
		wantInvalid(t, s.order(t, c.name, path, key(), form, c.body), "body", c.where, c.rule)
	}
	s.noneLeft(t, 1, 1)
}

// TestMergePatch is issue 11 case 7: an optional nullable member keeps
// absent, null and a value apart, through application/merge-patch+json.
func TestMergePatch(t *testing.T) {
	s := newStack(t)
	const mp = "application/merge-patch+json"
	patch := func(ctx, k, ct, body string) reply {
		r := s.send(t, "PATCH", "/notes/1", k, ct, body)
		t.Logf("%s: %d %s", ctx, r.status, r.body)
		return r
	}
	want := func(r reply, status int, body string) {
		t.Helper()
		if r.status != status || string(r.body) != body {
			t.Fatalf("got %d %s; want %d %s", r.status, r.body, status, body)
		}
	}
	absent := key()
	want(patch("title only", absent, mp, `{"title":"shopping"}`), 200, `{"id":1,"note":"milk","title":"shopping"}`)
	// absent and null are two requests
	if r := patch("null under the key of absent", absent, mp, `{"title":"shopping","note":null}`); r.status != 409 {
		t.Fatalf("absent then null under one key: %d %s; want 409", r.status, r.body)
	}
	want(patch("null", key(), mp, `{"note":null}`), 200, `{"id":1,"note":null,"title":"shopping"}`)
	want(patch("value", key(), mp, `{"note":"eggs"}`), 200, `{"id":1,"note":"eggs","title":"shopping"}`)
	// Only the declared media type; and the patch is validated too.
	if r := patch("as JSON", key(), "application/json", `{"note":null}`); r.status != 415 {
		t.Fatalf("application/json to a merge-patch operation: %d %s; want 415", r.status, r.body)
	}
	wantInvalid(t, patch("title null", key(), mp, `{"title":null}`), "body", "#/title", "type")
	wantInvalid(t, patch("undeclared", key(), mp, `{"notes":"x"}`), "body", "#/notes", "additionalProperties")
	if n := s.count(t, "idem_records"); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
}

// TestValidatedAsTheHandlerSeesIt: the handler sees the defaults, and
// not the undeclared members of an object whose type has no field for
// them (Item declares no additionalProperties), so the value as the
// handler sees it must satisfy the schema, and is what is fingerprinted:
// two items that differ only in a member one of them leaves to its
// default, or only in a member neither keeps, are duplicates (both found
// by FuzzGeneratedRequests).
func TestValidatedAsTheHandlerSeesIt(t *testing.T) {
	s := newStack(t)
	path := "/accounts/acme/orders"
	body := `{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1"},{"sku":"AB-1","count":1}]}`
	wantInvalid(t, s.order(t, "duplicates once defaulted", path, key(), "application/json", body), "body", "#/items", "uniqueItems")
	wantInvalid(t, s.order(t, "as a form", path, key(), "application/x-www-form-urlencoded",
		"quantity=1&amount=5&currency=EUR&items[0][sku]=AB-1&items[1][sku]=AB-1&items[1][count]=1"), "body", "#/items", "uniqueItems")
	wantInvalid(t, s.order(t, "duplicates without an undeclared member", path, key(), "application/json",
		`{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","gift":true},{"sku":"AB-1"}]}`), "body", "#/items", "uniqueItems")
	k := key()
	wantCreated(t, s.order(t, "distinct", path, k, "application/json", strings.Replace(body, `"count":1`, `"count":2`, 1)), false, `"count":1`, `"count":2`)
	// An undeclared member the typed request drops is not part of it.
	wantCreated(t, s.order(t, "with an undeclared member", path, k, "application/json",
		`{"quantity":1,"amount":5,"currency":"EUR","items":[{"sku":"AB-1","gift":true},{"sku":"AB-1","count":2}]}`), true)
	s.noneLeft(t, 1, 1)
}

// TestValidationSkip is the config's way out of issue 11 case 6:
// validation.skip turns the checks of one property off (Order's comment,
// maxLength 5), while decoding stays strict.
func TestValidationSkip(t *testing.T) {
	s := newStack(t)
	path := "/accounts/acme/orders"
	wantCreated(t, s.order(t, "past maxLength", path, key(), "application/json",
		`{"quantity":1,"amount":5,"currency":"EUR","comment":"longer than five"}`), false, `"comment":"longer than five"`)
	wantInvalid(t, s.order(t, "a number", path, key(), "application/json", `{"quantity":1,"amount":5,"currency":"EUR","comment":5}`), "body", "#/comment", "type")
	wantInvalid(t, s.order(t, "case variant", path, key(), "application/json", `{"quantity":1,"amount":5,"currency":"EUR","Comment":"x"}`), "body", "#/Comment", "properties")
	wantInvalid(t, s.order(t, "a property not skipped", path, key(), "application/json", `{"quantity":1,"amount":5,"currency":"EUR","note":"`+strings.Repeat("x", 21)+`"}`), "body", "#/note", "maxLength")
	s.noneLeft(t, 1, 1)
}

// TestHandlerSeesTheEngineKey: the spec declares the key header as a
// parameter (schema maxLength 36), and the handler's field holds the key the
// engine parsed — lower-cased, unquoted, the same as idem.KeyFromContext's
// Value — not the header as sent. The decoder does not read the header, and
// the engine checks the parameter's maxLength against its parsed key: a
// quoted key (38 characters as sent, 36 parsed) is accepted. JSON and
// streamed (multipart) operations alike.
func TestHandlerSeesTheEngineKey(t *testing.T) {
	s := newStack(t)
	k := key()
	path := "/accounts/acme/orders"
	sent := `"` + strings.ToUpper(k) + `"`
	want := `"IdempotencyKey":"` + k + `"`
	wantCreated(t, s.order(t, "a quoted upper-case key", path, sent, "application/json", order), false, want)
	// The same key spelt as parsed: the same record, replayed.
	wantCreated(t, s.order(t, "the key as parsed", path, k, "application/json", order), true, want)

	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, err := w.CreateFormFile("file", "f.bin")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte("hello"))
	w.WriteField("details", `{"kind":"memo"}`)
	w.Close()
	k2 := key()
	wantCreated(t, s.order(t, "an upload, upper-case key", "/accounts/acme/uploads", strings.ToUpper(k2), w.FormDataContentType(), b.String()),
		false, `"IdempotencyKey":"`+k2+`"`)
}

// TestContentEncoding is issue 35 item 8: a request body in a content
// coding (gzip, br) is refused with 415 and Accept-Encoding: identity,
// whatever its media type or however it is read (JSON, merge patch,
// multipart), never decoded as if it were not encoded, and it leaves no
// record; identity is no coding. An operation that declares a
// Content-Encoding header parameter takes the body as sent, and the coding
// is part of its fingerprint.
func TestContentEncoding(t *testing.T) {
	s := newStack(t)
	gz := func(text string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(text))
		_ = zw.Close()
		return b.String()
	}
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("details", `{"kind":"memo"}`)
	fw, _ := mw.CreateFormFile("file", "a.txt")
	_, _ = fw.Write([]byte("hello"))
	_ = mw.Close()
	for _, c := range []struct{ name, method, path, ct, body, coding string }{
		{"gzip JSON", "POST", "/accounts/acme/orders", "application/json", gz(order), "gzip"},
		{"br on a plain body", "POST", "/accounts/acme/orders", "application/json", order, "br"},
		{"gzip after identity", "POST", "/accounts/acme/orders", "application/json", order, "identity, gzip"},
		{"gzip form", "POST", "/accounts/acme/orders", "application/x-www-form-urlencoded", gz("quantity=1&amount=5&currency=EUR"), "GZIP"},
		{"gzip merge patch", "PATCH", "/notes/1", "application/merge-patch+json", gz(`{"title":"x"}`), "gzip"},
		{"gzip multipart", "POST", "/accounts/acme/uploads", mw.FormDataContentType(), gz(mp.String()), "gzip"},
	} {
		r := s.send(t, c.method, c.path, key(), c.ct, c.body, "Content-Encoding", c.coding)
		if r.status != 415 || r.header.Get("Accept-Encoding") != "identity" {
			t.Errorf("%s: %d Accept-Encoding %q %s; want 415 with Accept-Encoding: identity", c.name, r.status, r.header.Get("Accept-Encoding"), r.body)
			continue
		}
		if reason, _ := r.problem(t); reason != idemproblem.ReasonMediaType || !bytes.Contains(r.body, []byte("Content-Encoding")) {
			t.Errorf("%s: %s; want %s naming Content-Encoding", c.name, r.body, idemproblem.ReasonMediaType)
		}
	}
	s.noneLeft(t, 0, 0)
	wantCreated(t, s.order(t, "identity", "/accounts/acme/orders", key(), "application/json", order, "Content-Encoding", "identity"), false)

	doc := key()
	wantCreated(t, s.order(t, "gzip document", "/accounts/acme/documents", doc, "text/plain", gz("hello"), "Content-Encoding", "gzip"), false,
		`"coding":"gzip"`, `"text":"hello"`)
	wantCreated(t, s.order(t, "gzip document again", "/accounts/acme/documents", doc, "text/plain", gz("hello"), "Content-Encoding", "gzip"), true)
	wantConflict(t, s.order(t, "the same text in identity", "/accounts/acme/documents", doc, "text/plain", "hello"))
	s.noneLeft(t, 2, 1)
}

// TestUploadOverTheLimitBeforeItIsSent: an upload (read as a stream,
// idem.Engine.ServeStream) whose Content-Length is over
// idem.Config.MaxStreamedBodyBytes is 413 before its body is read: a
// client that sent Expect: 100-continue is not told to send it.
func TestUploadOverTheLimitBeforeItIsSent(t *testing.T) {
	s := newStack(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // fails a server that waits for the body, instead of hanging
	fmt.Fprintf(conn, "POST /accounts/acme/uploads HTTP/1.1\r\nHost: x\r\nIdempotency-Key: %s\r\n"+
		"Content-Type: multipart/form-data; boundary=b\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", key(), idem.DefaultMaxStreamedBodyBytes+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("%d before the body, want 413", resp.StatusCode)
	}
	s.noneLeft(t, 0, 0)
}
