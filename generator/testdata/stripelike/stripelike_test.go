package api

// Compiled into the package generated from openapi.yaml beside it and run by
// generator.TestStripeLike: typed decoding of Stripe's encodings over real
// HTTP, with the idempotency engine on a real PostgreSQL.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/idemtype"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// service records every typed request its handlers receive.
type service struct {
	Unimplemented
	mu   sync.Mutex
	seen []any
}

func (s *service) saw(req any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, req)
}

// take returns the requests seen since the last call.
func (s *service) take() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.seen
	s.seen = nil
	return out
}

func (s *service) PostCharges(ctx context.Context, tx pgx.Tx, req PostChargesRequest) (PostChargesResponse, error) {
	s.saw(req)
	var n int
	if err := tx.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
		return nil, err
	}
	return PostCharges200Response{Body: Charge{ID: "ch_1", Object: ChargeObjectCharge, Amount: req.Body.Amount, Currency: req.Body.Currency}}, nil
}

func (s *service) PostCustomers(ctx context.Context, tx pgx.Tx, req PostCustomersRequest) (PostCustomersResponse, error) {
	s.saw(req)
	secret := "hunter2"
	number := "4242424242424242"
	c := Customer{
		ID: "cus_1", Object: CustomerObjectCustomer, Password: &secret, Balance: req.Body.Balance,
		DefaultSource: idemtype.NewNullable(StringOrCard{Card: &Card{ID: "card_1", Object: CardObjectCard, Last4: "4242", Number: &number}}),
		Shipping:      idemtype.Null[Shipping](),
		Discount:      idemtype.Empty[Discount](),
	}
	if req.Body.Birthday != nil {
		c.Birthday = idemtype.NewNullable(*req.Body.Birthday)
	}
	review, _ := idemtype.ParseDate("2027-01-31")
	return PostCustomers200Response{Body: c, XRateLimitRemaining: 99, XNextReview: &review}, nil
}

func (s *service) PostPaymentMethods(ctx context.Context, tx pgx.Tx, req PostPaymentMethodsRequest) (PostPaymentMethodsResponse, error) {
	s.saw(req)
	pm := PaymentMethod{ID: "pm_1", Object: PaymentMethodObjectPaymentMethod}
	switch {
	case req.Body.CardInput != nil:
		pm.Type = "card"
		pm.Card = &Card{ID: "card_2", Object: CardObjectCard, Last4: (*req.Body.CardInput.Number)[12:], Number: req.Body.CardInput.Number}
	case req.Body.SepaDebitInput != nil:
		pm.Type = "sepa_debit"
	}
	return PostPaymentMethods200Response{Body: pm}, nil
}

func (s *service) GetCharges(ctx context.Context, req GetChargesRequest) (GetChargesResponse, error) {
	s.saw(req)
	return GetCharges200Response{Body: GetCharges200ResponseBody{Object: GetCharges200ResponseBodyObjectList, Data: []Charge{
		{ID: "ch_1", Object: ChargeObjectCharge, Amount: 1, Currency: "usd", Customer: idemtype.NewNullable(StringOrCustomer{String: ptr("cus_1")}), Shipping: idemtype.Null[Shipping]()},
		{ID: "ch_2", Object: ChargeObjectCharge, Amount: 2, Currency: "usd", Customer: idemtype.NewNullable(StringOrCustomer{Customer: &Customer{ID: "cus_2", Object: CustomerObjectCustomer}}),
			Shipping: idemtype.NewNullable(Shipping{Name: "Jenny", Phone: idemtype.Null[string]()})},
	}}}, nil
}

// PostFiles reads the file part as the stream it is given.
func (s *service) PostFiles(ctx context.Context, tx pgx.Tx, req PostFilesRequest) (PostFilesResponse, error) {
	size, sum, err := digest(req.Body.File.Content)
	if err != nil {
		return nil, err
	}
	s.saw(upload{req: req, size: size, sum: sum, spooled: spooled()})
	return PostFiles200Response{Body: FileObject{ID: "file_1", Object: FileObjectObjectFile, Size: size, Sha256: sum,
		Filename: ptr(req.Body.File.Filename), Purpose: ptr(string(req.Body.Purpose))}}, nil
}

// PostEvidence records its typed request; the file part is not read.
func (s *service) PostEvidence(ctx context.Context, tx pgx.Tx, req PostEvidenceRequest) (PostEvidenceResponse, error) {
	s.saw(req)
	return PostEvidence200Response{Body: FileObject{ID: "file_ev", Object: FileObjectObjectFile, Size: req.Body.File.Size, Sha256: req.Body.File.SHA256}}, nil
}

// PostDocuments and PostDocumentsUpload take one component schema, typed
// for JSON (Document) and for multipart (DocumentMultipart).
func (s *service) PostDocuments(ctx context.Context, tx pgx.Tx, req PostDocumentsRequest) (PostDocumentsResponse, error) {
	s.saw(req)
	return PostDocuments200Response{Body: FileObject{ID: "doc_json", Object: FileObjectObjectFile, Size: int64(len(req.Body.Content))}}, nil
}

func (s *service) PostDocumentsUpload(ctx context.Context, tx pgx.Tx, req PostDocumentsUploadRequest) (PostDocumentsUploadResponse, error) {
	size, sum, err := digest(req.Body.Content.Content)
	if err != nil {
		return nil, err
	}
	s.saw(req)
	return PostDocumentsUpload200Response{Body: FileObject{ID: "doc_part", Object: FileObjectObjectFile, Size: size, Sha256: sum}}, nil
}

// One component, two representations: the JSON type has the binary member
// as bytes, the multipart variant as a file part, down to the nested
// component with a binary member; a component without one is shared.
var (
	_ []byte                           = Document{}.Content
	_ idemtype.File                    = DocumentMultipart{}.Content
	_ *DocumentCover                   = Document{}.Cover
	_ *DocumentCoverMultipart          = DocumentMultipart{}.Cover
	_ []byte                           = DocumentCover{}.Image
	_ *idemtype.File                   = DocumentCoverMultipart{}.Image
	_ *Shipping                        = Document{}.Address
	_ *Shipping                        = DocumentMultipart{}.Address
	_ func(PostDocumentsRequest)       = func(r PostDocumentsRequest) { _ = Document(r.Body) }
	_ func(PostDocumentsUploadRequest) = func(r PostDocumentsUploadRequest) { _ = DocumentMultipart(r.Body) }
)

// PostFileContents reads the binary body as the stream it is given.
func (s *service) PostFileContents(ctx context.Context, tx pgx.Tx, req PostFileContentsRequest) (PostFileContentsResponse, error) {
	size, sum, err := digest(req.Body)
	if err != nil {
		return nil, err
	}
	s.saw(upload{req: req, size: size, sum: sum, spooled: spooled()})
	return PostFileContents200Response{Body: FileObject{ID: req.File, Object: FileObjectObjectFile, Size: size, Sha256: sum}}, nil
}

// upload is what an upload handler saw: the request and what it read.
type upload struct {
	req     any
	size    int64
	sum     string
	spooled map[string]int64 // the spool files in TMPDIR while the handler ran, by name
}

// spooled lists the files the server spooled request content to.
func spooled() map[string]int64 {
	out := map[string]int64{}
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "idemgen-body-") {
			out[e.Name()] = info.Size()
		}
	}
	return out
}

func digest(r io.Reader) (int64, string, error) {
	if r == nil {
		return 0, "", errors.New("no content")
	}
	h := sha256.New()
	n, err := io.Copy(h, r)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

func ptr[T any](v T) *T { return &v }

type fixture struct {
	t   *testing.T
	url string
	db  *pgtest.DB
	svc *service
}

func start(t *testing.T) *fixture {
	db := pgtest.New(t, pgtest.Options{})
	t.Setenv("TMPDIR", t.TempDir()) // where the server spools streamed content
	t.Cleanup(func() {
		if left := spooled(); len(left) > 0 {
			t.Errorf("spooled files left behind: %v", left)
		}
	})
	// Every policy the spec generates with is one the runtime starts with.
	engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations})
	if err != nil {
		t.Fatalf("idem.New refuses the generated operations: %v", err)
	}
	svc := &service{}
	srv := httptest.NewServer(NewHandler(svc, engine))
	t.Cleanup(srv.Close)
	return &fixture{t: t, url: srv.URL, db: db, svc: svc}
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (f *fixture) do(method, path, key, ct, body string) reply {
	f.t.Helper()
	return f.send(method, path, key, ct, strings.NewReader(body))
}

func (f *fixture) send(method, path, key, ct string, body io.Reader) reply {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{res.StatusCode, res.Header, string(b)}
}

// records counts the idempotency records of key.
func (f *fixture) records(key string) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM idem_records WHERE idempotency_key = $1", key).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// one returns the only request the handlers saw since the last call.
func (f *fixture) one() any {
	f.t.Helper()
	seen := f.svc.take()
	if len(seen) != 1 {
		f.t.Fatalf("the handlers saw %d requests, want 1: %+v", len(seen), seen)
	}
	return seen[0]
}

func (f *fixture) none(what string) {
	f.t.Helper()
	if seen := f.svc.take(); len(seen) != 0 {
		f.t.Fatalf("%s: the handlers saw %+v", what, seen)
	}
}

// refused asserts a 400 problem naming every wanted fragment, no handler
// call and no record for key.
func (f *fixture) refused(r reply, key string, want ...string) {
	f.t.Helper()
	if r.status != 400 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		f.t.Fatalf("want a 400 problem, got %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	for _, w := range want {
		if !strings.Contains(r.body, w) {
			f.t.Errorf("problem lacks %q: %s", w, r.body)
		}
	}
	f.none("a refused request")
	if key != "" && f.records(key) != 0 {
		f.t.Errorf("a refused request left a record for %s", key)
	}
}

const form = "application/x-www-form-urlencoded"

// chargeForm is a Stripe-style form body in bracket notation.
const chargeForm = "amount=2000&currency=usd&customer=cus_1&description=Tea" +
	"&items[0][price]=p_1&items[0][quantity]=2&items[1][price]=p_2" +
	"&metadata[order]=6735&metadata[note]=a%20b&expand[]=customer&expand[]=invoice" +
	"&shipping[name]=Jenny%20Rosen&shipping[address][city]=Berlin"

// chargeFormReordered is chargeForm with its fields in another order, its
// brackets percent-encoded and other spellings of the same values.
const chargeFormReordered = "shipping%5Baddress%5D%5Bcity%5D=Berlin&expand%5B%5D=customer&metadata[note]=a+b" +
	"&items[1][price]=p_2&currency=%75sd&items[0][quantity]=2&amount=2000&shipping[name]=Jenny+Rosen" +
	"&expand[]=invoice&description=Tea&items[0][price]=p_1&customer=cus_1&metadata[order]=6735"

func TestFormBody(t *testing.T) {
	f := start(t)
	r := f.do("POST", "/v1/charges", "k-form", form, chargeForm)
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", r.status, r.header, r.body)
	}
	got := f.one().(PostChargesRequest).Body
	want := PostChargesRequestBody{
		Amount: 2000, Currency: "usd", Customer: ptr("cus_1"), Description: ptr("Tea"),
		Capture: ptr(true), // default
		Items: []PostChargesRequestBodyItemsItem{
			{Price: "p_1", Quantity: ptr(int64(2))},
			{Price: "p_2", Quantity: ptr(int64(1))}, // default inside an array item
		},
		Metadata: idemtype.NewOrEmpty(map[string]string{"order": "6735", "note": "a b"}),
		Expand:   []string{"customer", "invoice"},
		Shipping: idemtype.NewOrEmpty(ShippingInput{Name: "Jenny Rosen", Address: &ShippingInputAddress{City: ptr("Berlin")}}),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("typed body:\n got %+v\nwant %+v", got, want)
	}

	// The same form in another order and spelling is the same request: a
	// replay, byte for byte, without running the handler.
	again := f.do("POST", "/v1/charges", "k-form", form, chargeFormReordered)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || again.body != r.body {
		t.Fatalf("reordered form: %d %v %s; want the replay of %s", again.status, again.header, again.body, r.body)
	}
	f.none("a replay")
	// Another value under the same key is a conflict.
	if c := f.do("POST", "/v1/charges", "k-form", form, strings.Replace(chargeForm, "items[1][price]=p_2", "items[1][price]=p_3", 1)); c.status != 409 {
		t.Fatalf("changed item: %d %s", c.status, c.body)
	}
	f.none("a conflict")

	// "" unsets an expandable-or-empty member.
	f.do("POST", "/v1/charges", "k-empty", form, "amount=1&currency=eur&metadata=&shipping=")
	got = f.one().(PostChargesRequest).Body
	if !got.Metadata.IsEmpty() || !got.Shipping.IsEmpty() {
		t.Errorf("metadata= and shipping=: %+v", got)
	}
}

func TestFormBodyRefused(t *testing.T) {
	f := start(t)
	for _, tc := range []struct{ body, want string }{
		{"amount=abc&currency=usd", `"pointer":"#/amount"`},
		{"amount=1&currency=usd&items[1][price]=p_1", "#/items"},            // an index gap
		{"amount=1&currency=usd&items[0][quantity]=1", `"rule":"required"`}, // price missing
		{"amount=1&currency=usd&amount=2", "#/amount"},                      // a scalar given twice
		{"amount=1&currency=USD", `"rule":"pattern"`},
		{"amount=1&currency=usd&shipping[phone]=1", "#/shipping"}, // neither a ShippingInput nor ""
		{"amount=1&currency=usd&metadata=x", "#/metadata"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			f.t = t
			f.refused(f.do("POST", "/v1/charges", "k-bad", form, tc.body), "k-bad", tc.want)
		})
	}
	f.t = t
	// Nothing was kept for the key: a corrected request runs.
	if r := f.do("POST", "/v1/charges", "k-bad", form, "amount=1&currency=usd"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("corrected: %d %s", r.status, r.body)
	}
	f.one()
}

// TestJSONOrForm: one operation, two media types, dispatched on
// Content-Type to the same typed body.
func TestJSONOrForm(t *testing.T) {
	f := start(t)
	bodies := map[string]string{
		"application/json":                `{"email":"j@example.com","birthday":"1990-02-28","metadata":{"order":"6735"},"expand":["default_source"],"shipping":{"name":"Jenny"}}`,
		form:                              "email=j%40example.com&birthday=1990-02-28&metadata[order]=6735&expand[]=default_source&shipping[name]=Jenny",
		"application/json; charset=utf-8": `{"email":"j@example.com","birthday":"1990-02-28","metadata":{"order":"6735"},"expand":["default_source"],"shipping":{"name":"Jenny"}}`,
	}
	var first string
	for i, ct := range []string{"application/json", form, "application/json; charset=utf-8"} {
		key := fmt.Sprintf("k-customer-%d", i)
		r := f.do("POST", "/v1/customers", key, ct, bodies[ct])
		if r.status != 200 {
			t.Fatalf("%s: %d %s", ct, r.status, r.body)
		}
		got := f.one().(PostCustomersRequest).Body
		b, _ := json.Marshal(got)
		if first == "" {
			first = string(b)
		} else if string(b) != first {
			t.Errorf("%s decodes to\n%s\nJSON to\n%s", ct, b, first)
		}
		if got.Birthday == nil || got.Birthday.String() != "1990-02-28" || got.Birthday.Month != 2 ||
			got.TaxExempt == nil || *got.TaxExempt != TaxExemptNone || got.Balance == nil || *got.Balance != 0 {
			t.Errorf("%s: date or defaults: %+v", ct, got)
		}
		// Typed response headers, and writeOnly members never sent.
		if r.header.Get("X-Rate-Limit-Remaining") != "99" || r.header.Get("X-Next-Review") != "2027-01-31" {
			t.Errorf("%s: response headers %v", ct, r.header)
		}
		for _, secret := range []string{"hunter2", "password", "4242424242424242", `"number"`} {
			if strings.Contains(r.body, secret) {
				t.Errorf("%s: the response sends the writeOnly %s: %s", ct, secret, r.body)
			}
		}
		for _, want := range []string{`"default_source":{"id":"card_1","last4":"4242","object":"card"}`, `"shipping":null`, `"discount":""`, `"birthday":"1990-02-28"`} {
			if !strings.Contains(r.body, want) {
				t.Errorf("%s: response lacks %s: %s", ct, want, r.body)
			}
		}
		// The replay sends the stored body: no writeOnly member there either.
		re := f.do("POST", "/v1/customers", key, ct, bodies[ct])
		if re.header.Get("Idempotent-Replayed") != "true" || re.body != r.body {
			t.Errorf("%s: replay %d %v %s", ct, re.status, re.header, re.body)
		}
		// The declared response headers are stored and replayed as sent.
		for _, h := range []string{"X-Rate-Limit-Remaining", "X-Next-Review"} {
			if !reflect.DeepEqual(re.header[h], r.header[h]) {
				t.Errorf("%s: replay %s = %q, first %q", ct, h, re.header[h], r.header[h])
			}
		}
		f.none("a replay")
	}
	// A media type the operation does not declare is 415, and no record.
	if r := f.do("POST", "/v1/customers", "k-text", "text/plain", "email=x"); r.status != 415 || f.records("k-text") != 0 {
		t.Errorf("text/plain: %d %s", r.status, r.body)
	}
	f.none("a 415")
}

func TestReadOnlyAndDates(t *testing.T) {
	f := start(t)
	for _, tc := range []struct{ ct, body, want string }{
		{form, "id=cus_x&email=a", `"rule":"readOnly"`},
		{"application/json", `{"id":"cus_x"}`, `"rule":"readOnly"`},
		{form, "birthday=2026-02-30", "#/birthday"},
		{"application/json", `{"birthday":"2026-1-2"}`, "#/birthday"},
		{"application/json", `{"tax_exempt":"sometimes"}`, "#/tax_exempt"},
	} {
		f.refused(f.do("POST", "/v1/customers", "k-ro", tc.ct, tc.body), "k-ro", tc.want)
	}
}

func TestDiscriminator(t *testing.T) {
	f := start(t)
	ct := "application/json"
	r := f.do("POST", "/v1/payment_methods", "k-card", ct, `{"type":"card","number":"4000056655665556","exp_month":12,"billing_details":null}`)
	if r.status != 200 {
		t.Fatalf("card: %d %s", r.status, r.body)
	}
	pm := f.one().(PostPaymentMethodsRequest).Body
	if pm.CardInput == nil || pm.SepaDebitInput != nil || *pm.CardInput.Number != "4000056655665556" || pm.CardInput.ExpMonth != 12 || !pm.CardInput.BillingDetails.IsNull() {
		t.Fatalf("card: %+v", pm)
	}
	if strings.Contains(r.body, "4000056655665556") || !strings.Contains(r.body, `"last4":"5556"`) {
		t.Errorf("card response: %s", r.body)
	}
	f.do("POST", "/v1/payment_methods", "k-sepa", ct, `{"type":"sepa_debit","iban":"DE89370400440532013000"}`)
	pm = f.one().(PostPaymentMethodsRequest).Body
	if pm.SepaDebitInput == nil || pm.CardInput != nil || pm.SepaDebitInput.Iban != "DE89370400440532013000" {
		t.Fatalf("sepa: %+v", pm)
	}
	for _, bad := range []string{
		`{"type":"bird","number":"1","exp_month":1}`,      // unknown discriminator value
		`{"type":"bird","iban":"DE89370400440532013000"}`, // valid as SepaDebitInput but for the discriminator
		`{"type":"Card","number":"1","exp_month":1}`,      // mapping values are exact
		`42`, `"card"`, `[]`, // not objects
		`{"number":"1","exp_month":1}`,                     // no discriminator
		`{"type":"sepa_debit","number":"1","exp_month":1}`, // the mapped member refuses it
		`{"type":"card","number":"1","exp_month":13}`,      // the member's rules apply
	} {
		f.refused(f.do("POST", "/v1/payment_methods", "k-bad", ct, bad), "k-bad")
	}
}

func TestDeepObjectQuery(t *testing.T) {
	f := start(t)
	r := f.do("GET", "/v1/charges?created[gt]=1700000000&created%5Blte%5D=1800000000&expand[]=data.customer&expand[]=data.shipping", "", "", "")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	got := f.one().(GetChargesRequest)
	if got.Created == nil || got.Created.RangeQuery == nil || got.Created.Int64 != nil ||
		!reflect.DeepEqual(*got.Created.RangeQuery, RangeQuery{Gt: ptr(int64(1700000000)), Lte: ptr(int64(1800000000))}) {
		t.Errorf("created: %+v", got.Created)
	}
	if !reflect.DeepEqual(got.Expand, []string{"data.customer", "data.shipping"}) || got.Limit == nil || *got.Limit != 10 {
		t.Errorf("expand, limit: %+v", got)
	}
	// Expandable fields in responses: an id, or the object; null wrappers.
	for _, want := range []string{`"customer":"cus_1"`, `"customer":{"id":"cus_2","object":"customer"}`, `"shipping":null`, `"shipping":{"name":"Jenny","phone":null}`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("response lacks %s: %s", want, r.body)
		}
	}
	for _, bad := range []string{"created[gt]=soon", "created[gt]=1&created[gt]=2", "limit=0"} {
		if r := f.do("GET", "/v1/charges?"+bad, "", "", ""); r.status != 400 {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
		f.none(bad)
	}
}

// part is one part of a multipart body.
type part struct {
	name, filename, ct string
	content            io.Reader
}

// multipartBody writes parts with the boundary given.
func multipartBody(t *testing.T, boundary string, parts ...part) (string, io.Reader) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	if err := mw.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, p := range parts {
			h := textproto.MIMEHeader{}
			cd := fmt.Sprintf(`form-data; name="%s"`, p.name)
			if p.filename != "" {
				cd += fmt.Sprintf(`; filename="%s"`, p.filename)
			}
			h.Set("Content-Disposition", cd)
			if p.ct != "" {
				h.Set("Content-Type", p.ct)
			}
			w, err := mw.CreatePart(h)
			if err == nil {
				_, err = io.Copy(w, p.content)
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return mw.FormDataContentType(), pr
}

// pattern is n bytes of a repeating pattern seeded by seed.
func pattern(n int, seed byte) io.Reader {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return io.LimitReader(&repeat{b: b}, int64(n))
}

type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}

func sumOf(r io.Reader) (int64, string) {
	n, s, _ := digest(r)
	return n, s
}

// TestMultipart: a file part reaches the handler as a stream with its part
// headers, typed fields beside it in bracket notation; the same parts in
// another order and with another boundary are a replay; another file is a
// conflict. The file is larger than idem.DefaultMaxBodyBytes and than
// idemimpl.MaxPartMemory, which bound what is held in memory.
func TestMultipart(t *testing.T) {
	f := start(t)
	const size = 3<<20 + 17
	wantSize, wantSum := sumOf(pattern(size, 1))
	parts := []part{
		{name: "purpose", content: strings.NewReader("dispute_evidence")},
		{name: "file_link_data[create]", content: strings.NewReader("true")},
		{name: "file_link_data[metadata][case]", content: strings.NewReader("7")},
		{name: "expand[]", content: strings.NewReader("links")},
		{name: "file", filename: "evidence.png", ct: "image/png", content: pattern(size, 1)},
	}
	ct, body := multipartBody(t, "b0undary-1", parts...)
	r := f.send("POST", "/v1/files", "k-file", ct, body)
	if r.status != 200 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	up := f.one().(upload)
	got := up.req.(PostFilesRequest).Body
	if up.size != wantSize || up.sum != wantSum {
		t.Errorf("the handler read %d bytes, sha-256 %s; want %d, %s", up.size, up.sum, wantSize, wantSum)
	}
	// The file reached the handler from a temporary file, not from memory;
	// the other parts were not spooled. The file is gone after the response.
	if len(up.spooled) != 1 || !slices.Contains(slices.Collect(maps.Values(up.spooled)), wantSize) {
		t.Errorf("spooled while the handler ran: %v; want one file of %d bytes", up.spooled, wantSize)
	}
	if left := spooled(); len(left) != 0 {
		t.Errorf("spooled files left after the response: %v", left)
	}
	file := got.File
	if file.Filename != "evidence.png" || file.ContentType() != "image/png" || file.Size != wantSize || file.SHA256 != wantSum ||
		!strings.Contains(file.Header.Get("Content-Disposition"), `filename="evidence.png"`) {
		t.Errorf("file part: %+v", file)
	}
	if got.Purpose != PostFilesRequestBodyPurposeDisputeEvidence || got.FileLinkData == nil || !got.FileLinkData.Create ||
		!reflect.DeepEqual(got.Expand, []string{"links"}) {
		t.Errorf("fields: %+v", got)
	}
	if md, ok := got.FileLinkData.Metadata.Value(); !ok || md["case"] != "7" {
		t.Errorf("file_link_data[metadata]: %+v", got.FileLinkData.Metadata)
	}

	// The same parts in another order, with another boundary: a replay.
	reordered := []part{parts[4], parts[3], parts[2], parts[0], parts[1]}
	reordered[0].content = pattern(size, 1)
	for i := range reordered[1:] {
		reordered[i+1].content = strings.NewReader(map[string]string{"purpose": "dispute_evidence", "file_link_data[create]": "true",
			"file_link_data[metadata][case]": "7", "expand[]": "links"}[reordered[i+1].name])
	}
	ct, body = multipartBody(t, "another-boundary", reordered...)
	again := f.send("POST", "/v1/files", "k-file", ct, body)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || again.body != r.body {
		t.Fatalf("reordered parts: %d %v %s", again.status, again.header, again.body)
	}
	f.none("a replay")
	// Another file under the key: a conflict.
	ct, body = multipartBody(t, "b0undary-1", part{name: "purpose", content: strings.NewReader("dispute_evidence")},
		part{name: "file", filename: "evidence.png", ct: "image/png", content: pattern(size, 2)})
	if c := f.send("POST", "/v1/files", "k-file", ct, body); c.status != 409 {
		t.Fatalf("another file: %d %s", c.status, c.body)
	}
	f.none("a conflict")

	for name, bad := range map[string][]part{
		"no file":               {{name: "purpose", content: strings.NewReader("dispute_evidence")}},
		"file without a name":   {{name: "purpose", content: strings.NewReader("dispute_evidence")}, {name: "file", content: strings.NewReader("x")}},
		"file where a value is": {{name: "purpose", content: strings.NewReader("dispute_evidence")}, {name: "expand[]", filename: "e.txt", content: strings.NewReader("links")}, {name: "file", filename: "a", content: strings.NewReader("x")}},
		"bad enum":              {{name: "purpose", content: strings.NewReader("selfie")}, {name: "file", filename: "a", content: strings.NewReader("x")}},
		"bad boolean":           {{name: "purpose", content: strings.NewReader("dispute_evidence")}, {name: "file_link_data[create]", content: strings.NewReader("yes")}, {name: "file", filename: "a", content: strings.NewReader("x")}},
	} {
		t.Run(name, func(t *testing.T) {
			f.t = t
			ct, body := multipartBody(t, "b", bad...)
			f.refused(f.send("POST", "/v1/files", "k-bad-file", ct, body), "k-bad-file")
		})
	}
	f.t = t
	// A multipart body without its boundary is malformed.
	f.refused(f.do("POST", "/v1/files", "k-bad-file", "multipart/form-data", "--x\r\n"), "k-bad-file")
}

// asFile gives part i a filename.
func asFile(i int, name string, ps []part) []part {
	ps[i].filename = name
	return ps
}

// TestMultipartJSONParts: parts that hold JSON (an object property without
// an encoding, an array of objects, an encoding with contentType
// application/json) are parsed as JSON, typed and validated by their
// property's schema, defaults applied; the fingerprint covers the decoded
// value, so the same JSON with other white space and member order is a
// replay and another value a conflict; malformed JSON is a 400 naming the
// part, with no record.
func TestMultipartJSONParts(t *testing.T) {
	f := start(t)
	parts := func(details, tags string, lines ...string) []part {
		ps := []part{
			{name: "file", filename: "ev.txt", ct: "text/plain", content: strings.NewReader("receipt")},
			{name: "details", ct: "application/json", content: strings.NewReader(details)},
			{name: "note", content: strings.NewReader("see receipt")},
		}
		if tags != "" {
			ps = append(ps, part{name: "tags", ct: "application/json", content: strings.NewReader(tags)})
		}
		for _, l := range lines {
			ps = append(ps, part{name: "lines", content: strings.NewReader(l)}) // no Content-Type: JSON by the schema
		}
		return ps
	}
	ct, body := multipartBody(t, "b-1", parts(`{"reason":"fraud","amount":5}`, `["a","b"]`, `{"sku":"x"}`, `{"sku":"y","qty":2}`)...)
	r := f.send("POST", "/v1/evidence", "k-ev", ct, body)
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	got := f.one().(PostEvidenceRequest).Body
	want := PostEvidenceRequestBody{
		Details: PostEvidenceRequestBodyDetails{Reason: PostEvidenceRequestBodyDetailsReasonFraud, Amount: ptr(int64(5))},
		Tags:    []string{"a", "b"},
		Lines:   []PostEvidenceRequestBodyLinesItem{{Sku: "x", Qty: ptr(int64(1))}, {Sku: "y", Qty: ptr(int64(2))}}, // a default inside a JSON part
		Note:    ptr("see receipt"),
	}
	gotFile := got.File
	got.File = idemtype.File{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("typed body:\n got %+v\nwant %+v", got, want)
	}
	if gotFile.Filename != "ev.txt" || gotFile.Size != int64(len("receipt")) {
		t.Errorf("file part: %+v", gotFile)
	}

	// The same JSON respelled (white space, member order), another boundary:
	// the same request, a replay.
	// details comes as a file this time (curl -F 'details=@d.json'): still
	// a JSON part.
	ct, body = multipartBody(t, "other-boundary", asFile(1, "d.json", parts(" {\n \"amount\" : 5 ,\t\"reason\":\"fraud\" } ", ` [ "a" , "b" ]`, `{ "sku" : "x" }`, `{"qty":2,"sku":"y"}`))...)
	again := f.send("POST", "/v1/evidence", "k-ev", ct, body)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || again.body != r.body {
		t.Fatalf("respelled JSON parts: %d %v %s; want the replay of %s", again.status, again.header, again.body, r.body)
	}
	f.none("a replay")
	// Another value inside a JSON part, under the same key: a conflict.
	for what, ps := range map[string][]part{
		"details.amount": parts(`{"reason":"fraud","amount":6}`, `["a","b"]`, `{"sku":"x"}`, `{"sku":"y","qty":2}`),
		"tags order":     parts(`{"reason":"fraud","amount":5}`, `["b","a"]`, `{"sku":"x"}`, `{"sku":"y","qty":2}`),
		"a line less":    parts(`{"reason":"fraud","amount":5}`, `["a","b"]`, `{"sku":"x"}`),
	} {
		ct, body = multipartBody(t, "b-2", ps...)
		if c := f.send("POST", "/v1/evidence", "k-ev", ct, body); c.status != 409 {
			t.Errorf("%s changed: %d %s, want 409", what, c.status, c.body)
		}
		f.none("a conflict")
	}

	for _, tc := range []struct {
		name  string
		parts []part
		want  []string
	}{
		{"malformed JSON", parts(`{"reason":"fraud",`, ""), []string{`"pointer":"#/details"`, `part \"details\" is not valid JSON`}},
		{"trailing data", parts(`{"reason":"fraud"} x`, ""), []string{`part \"details\" is not valid JSON`}},
		{"malformed item", parts(`{"reason":"fraud"}`, "", `{"sku":}`), []string{`part \"lines\" is not valid JSON`}},
		{"not JSON at all", parts(`{"reason":"fraud"}`, "a,b"), []string{`part \"tags\" is not valid JSON`}},
		{"schema: enum", parts(`{"reason":"other"}`, ""), []string{`"pointer":"#/details/reason"`, `"rule":"enum"`}},
		{"schema: required", parts(`{"amount":1}`, ""), []string{`"pointer":"#/details/reason"`, `"rule":"required"`}},
		{"schema: minimum", parts(`{"reason":"fraud","amount":0}`, ""), []string{`"pointer":"#/details/amount"`}},
		{"schema: item type", parts(`{"reason":"fraud"}`, `["a",1]`), []string{`"pointer":"#/tags/1"`}},
		{"schema: maxLength", parts(`{"reason":"fraud"}`, `["abcdefghijk"]`), []string{`"pointer":"#/tags/0"`}},
		{"given twice", append(parts(`{"reason":"fraud"}`, ""), part{name: "details", content: strings.NewReader(`{"reason":"fraud"}`)}), []string{`part \"details\" is given 2 times`}},
		{"JSON and brackets", append(parts(`{"reason":"fraud"}`, ""), part{name: "details[amount]", content: strings.NewReader("1")}), []string{"both as JSON and in [bracket] notation"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			ct, body := multipartBody(t, "b-bad", tc.parts...)
			f.refused(f.send("POST", "/v1/evidence", "k-ev-bad", ct, body), "k-ev-bad", tc.want...)
		})
	}
	f.t = t
}

// TestSharedSchemaJSONAndMultipart: a component schema with a binary
// member taken by a JSON body and by a multipart body decodes in each as
// its own Go type, over HTTP: base64 bytes in JSON, file parts (also one
// nested in a component) in multipart.
func TestSharedSchemaJSONAndMultipart(t *testing.T) {
	f := start(t)
	r := f.do("POST", "/v1/documents", "k-doc-json", "application/json",
		`{"title":"t","content":"aGVsbG8=","cover":{"caption":"c","image":"AQI="},"address":{"name":"Jenny"}}`)
	if r.status != 200 {
		t.Fatalf("JSON: %d %s", r.status, r.body)
	}
	doc := f.one().(PostDocumentsRequest).Body
	want := Document{Title: "t", Content: []byte("hello"), Cover: &DocumentCover{Caption: ptr("c"), Image: []byte{1, 2}}, Address: &Shipping{Name: "Jenny"}}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("JSON body:\n got %+v\nwant %+v", doc, want)
	}

	ct, body := multipartBody(t, "b-doc",
		part{name: "title", content: strings.NewReader("t")},
		part{name: "content", filename: "doc.txt", ct: "text/plain", content: strings.NewReader("hello")},
		part{name: "cover[caption]", content: strings.NewReader("c")},
		part{name: "cover[image]", filename: "cover.png", ct: "image/png", content: strings.NewReader("\x01\x02")},
		part{name: "address[name]", content: strings.NewReader("Jenny")},
	)
	r = f.send("POST", "/v1/documents/upload", "k-doc-part", ct, body)
	if r.status != 200 {
		t.Fatalf("multipart: %d %s", r.status, r.body)
	}
	up := f.one().(PostDocumentsUploadRequest).Body
	if up.Title != "t" || up.Content.Filename != "doc.txt" || up.Content.Size != 5 || up.Cover == nil ||
		up.Cover.Image == nil || up.Cover.Image.Filename != "cover.png" || up.Cover.Image.Size != 2 || *up.Cover.Caption != "c" ||
		up.Address == nil || up.Address.Name != "Jenny" {
		t.Errorf("multipart body: %+v", up)
	}
	if !strings.Contains(r.body, `"size":5`) {
		t.Errorf("the handler did not read the file part's content: %s", r.body)
	}
	// Base64 in a multipart body is not a file: refused, no record.
	ct, body = multipartBody(t, "b-doc", part{name: "title", content: strings.NewReader("t")}, part{name: "content", content: strings.NewReader("aGVsbG8=")})
	f.refused(f.send("POST", "/v1/documents/upload", "k-doc-bad", ct, body), "k-doc-bad")
}

// TestBinaryBody: an application/octet-stream body reaches the handler as
// an io.Reader; a replay and a conflict are decided by its SHA-256.
func TestBinaryBody(t *testing.T) {
	f := start(t)
	const size = 5 << 20
	wantSize, wantSum := sumOf(pattern(size, 3))
	r := f.send("POST", "/v1/files/file_9/contents", "k-bin", "application/octet-stream", pattern(size, 3))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	up := f.one().(upload)
	if up.size != wantSize || up.sum != wantSum || up.req.(PostFileContentsRequest).File != "file_9" {
		t.Errorf("the handler read %d bytes, sha-256 %s of %+v; want %d, %s", up.size, up.sum, up.req, wantSize, wantSum)
	}
	if len(up.spooled) != 1 || !slices.Contains(slices.Collect(maps.Values(up.spooled)), wantSize) {
		t.Errorf("spooled while the handler ran: %v; want one file of %d bytes", up.spooled, wantSize)
	}
	if again := f.send("POST", "/v1/files/file_9/contents", "k-bin", "application/octet-stream", pattern(size, 3)); again.header.Get("Idempotent-Replayed") != "true" || again.body != r.body {
		t.Errorf("replay: %d %v %s", again.status, again.header, again.body)
	}
	f.none("a replay")
	if c := f.send("POST", "/v1/files/file_9/contents", "k-bin", "application/octet-stream", pattern(size, 4)); c.status != 409 {
		t.Errorf("other content: %d %s", c.status, c.body)
	}
	if e := f.send("POST", "/v1/files/file_9/contents", "k-empty", "application/octet-stream", bytes.NewReader(nil)); e.status != 400 || f.records("k-empty") != 0 {
		t.Errorf("empty body: %d %s", e.status, e.body)
	}
	// More than idem.Config.MaxStreamedBodyBytes: 413, no record.
	if big := f.send("POST", "/v1/files/file_9/contents", "k-big", "application/octet-stream", pattern(idem.DefaultMaxStreamedBodyBytes+1, 5)); big.status != 413 || f.records("k-big") != 0 {
		t.Errorf("too large: %d %s", big.status, big.body)
	}
	f.none("refused uploads")
}

// TestClientUploads: the generated client sends a multipart body with its
// file and a binary body, and a retry under the same key is a replay.
func TestClientUploads(t *testing.T) {
	f := start(t)
	c, err := NewClient(f.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func() (*idemclient.Result[PostFilesResponse], error) {
		return c.PostFiles(ctx, PostFilesRequest{Body: PostFilesRequestBody{
			Purpose:      PostFilesRequestBodyPurposeIdentityDocument,
			FileLinkData: &PostFilesRequestBodyFileLinkData{Create: true, Metadata: idemtype.NewOrEmpty(map[string]string{"a": "b"})},
			File:         idemtype.File{Filename: "passport.pdf", Header: textproto.MIMEHeader{"Content-Type": {"application/pdf"}}, Content: strings.NewReader("%PDF-1.7 ...")},
		}}, idemclient.WithIdempotencyKey("k-client-file"))
	}
	res, err := send()
	if err != nil {
		t.Fatal(err)
	}
	seen := f.one().(upload)
	got := seen.req.(PostFilesRequest).Body
	if seen.size != 12 || got.File.Filename != "passport.pdf" || got.File.ContentType() != "application/pdf" ||
		got.Purpose != PostFilesRequestBodyPurposeIdentityDocument || got.FileLinkData == nil || !got.FileLinkData.Create {
		t.Errorf("the handler saw %+v (%d bytes)", got, seen.size)
	}
	if md, _ := got.FileLinkData.Metadata.Value(); md["a"] != "b" {
		t.Errorf("metadata: %+v", got.FileLinkData.Metadata)
	}
	if ok, isOK := res.Response.(PostFiles200Response); !isOK || ok.Body.Size != 12 || res.Replayed {
		t.Errorf("result %+v", res)
	}
	if again, err := send(); err != nil || !again.Replayed {
		t.Errorf("the same upload again: %+v %v", again, err)
	}
	f.none("a replay")

	// JSON parts: the client sends details, tags and each line as JSON.
	ev := PostEvidenceRequestBody{
		Details: PostEvidenceRequestBodyDetails{Reason: PostEvidenceRequestBodyDetailsReasonDuplicate},
		Tags:    []string{"t"},
		Lines:   []PostEvidenceRequestBodyLinesItem{{Sku: "x", Qty: ptr(int64(3))}},
		File:    idemtype.File{Filename: "r.txt", Content: strings.NewReader("r")},
	}
	if _, err := c.PostEvidence(ctx, PostEvidenceRequest{Body: ev}, idemclient.WithIdempotencyKey("k-client-ev")); err != nil {
		t.Fatal(err)
	}
	gotEv := f.one().(PostEvidenceRequest).Body
	gotEv.File, ev.File = idemtype.File{}, idemtype.File{}
	if !reflect.DeepEqual(gotEv, ev) {
		t.Errorf("evidence through the client:\n got %+v\nwant %+v", gotEv, ev)
	}

	bin, err := c.PostFileContents(ctx, PostFileContentsRequest{File: "file_3", Body: strings.NewReader("raw bytes")}, idemclient.WithIdempotencyKey("k-client-bin"))
	if err != nil {
		t.Fatal(err)
	}
	if seen := f.one().(upload); seen.size != 9 || bin.Response.(PostFileContents200Response).Body.ID != "file_3" {
		t.Errorf("binary: %+v", seen)
	}
}
