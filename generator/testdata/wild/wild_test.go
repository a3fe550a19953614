package api

// Compiled into the package generated from openapi.yaml beside it and run by
// generator.TestWild: shapes of public specs that idemgen once generated
// wrongly, driven over real HTTP with the idempotency engine on a real
// PostgreSQL. Each test names the defect it guards.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/conformance"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtype"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// service answers with the operation and what it received.
type service struct{ Unimplemented }

func hit(op, got string) Hit { return Hit{Op: op, Got: &got} }

func (service) SetScope(ctx context.Context, tx pgx.Tx, req SetScopeRequest) (SetScopeResponse, error) {
	switch s := req.Body; {
	case s.BotCommandScopeChat != nil:
		return SetScope200Response{Body: hit("setScope", fmt.Sprintf("chat %d", s.BotCommandScopeChat.ChatID))}, nil
	case s.BotCommandScopeDefault != nil:
		return SetScope200Response{Body: hit("setScope", "default")}, nil
	}
	return nil, fmt.Errorf("no member set")
}

func (service) Upload(ctx context.Context, tx pgx.Tx, req UploadRequest) (UploadResponse, error) {
	var got []string
	for _, f := range req.Body.File {
		b, err := io.ReadAll(f.Content)
		if err != nil {
			return nil, err
		}
		got = append(got, f.Filename+":"+string(b))
	}
	if f := req.Body.CoverImage; f != nil {
		b, err := io.ReadAll(f.Content)
		if err != nil {
			return nil, err
		}
		got = append(got, "cover "+f.Filename+":"+string(b))
	}
	if m := req.Body.Meta; m != nil {
		got = append(got, "title="+m.Title)
		if m.Pages != nil {
			got = append(got, fmt.Sprintf("pages=%d", *m.Pages))
		}
	}
	return Upload200Response{Body: hit("upload", strings.Join(got, " "))}, nil
}

func (service) Tag(ctx context.Context, tx pgx.Tx, req TagRequest) (TagResponse, error) {
	return Tag200Response{Body: hit("tag", strings.Join(req.Body.Tags, ","))}, nil
}

func (service) PostMessage(ctx context.Context, tx pgx.Tx, req PostMessageRequest) (PostMessageResponse, error) {
	return PostMessage200Response{Body: req.Body}, nil
}

func (service) GetItem(ctx context.Context, req GetItemRequest) (GetItemResponse, error) {
	return GetItem200Response{Body: hit("getItem", req.ItemID)}, nil
}

func (service) CreateAnswer(ctx context.Context, tx pgx.Tx, req CreateAnswerRequest2) (CreateAnswerResponse, error) {
	got := ""
	if b := req.Body; b != nil && b.Zone != nil {
		switch *b.Zone {
		case CreateAnswerRequestZoneEtcGMTPlus1:
			got = "plus"
		case CreateAnswerRequestZoneEtcGMTMinus1:
			got = "minus"
		}
	}
	return CreateAnswer200Response{Body: hit("createAnswer", got)}, nil
}

func (service) ListBooks(ctx context.Context, req ListBooksRequest) (ListBooksResponse, error) {
	return ListBooks200Response{Body: hit("listBooks", fmt.Sprint(req.ShelfID))}, nil
}

func (service) GetFeatured(ctx context.Context, req GetFeaturedRequest) (GetFeaturedResponse, error) {
	return GetFeatured200Response{Body: hit("getFeatured", req.BookID)}, nil
}

func (service) ShelfTimeline(ctx context.Context, req ShelfTimelineRequest) (ShelfTimelineResponse, error) {
	return ShelfTimeline200Response{Body: hit("shelfTimeline", fmt.Sprint(req.ShelfID))}, nil
}

func (service) LatestEntry(ctx context.Context, req LatestEntryRequest) (LatestEntryResponse, error) {
	return LatestEntry200Response{Body: hit("latestEntry", req.ListID)}, nil
}

func (service) AllEntries(ctx context.Context, req AllEntriesRequest) (AllEntriesResponse, error) {
	return AllEntries200Response{Body: hit("allEntries", req.EntryID)}, nil
}

func (service) ListSection(ctx context.Context, req ListSectionRequest) (ListSectionResponse, error) {
	return ListSection200Response{Body: hit("listSection", req.ListID+"/"+req.Section+"/"+req.Item)}, nil
}

// newEngine is an engine over a fresh schema of the test database.
func newEngine(t *testing.T) *idem.Engine {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{})
	engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations})
	if err != nil {
		t.Fatalf("idem.New refuses the generated operations: %v", err)
	}
	return engine
}

// send sends a request to h and returns the status and body.
func send(t *testing.T, h http.Handler, method, target, ctype string, body []byte) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	if method == "POST" {
		r.Header.Set("Idempotency-Key", uuid.NewString())
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// wantHit wants 200 with the Hit of op carrying got.
func wantHit(t *testing.T, status int, body, op, got string) {
	t.Helper()
	var h Hit
	if status != 200 || json.Unmarshal([]byte(body), &h) != nil || h.Op != op || h.Got == nil || *h.Got != got {
		t.Errorf("got %d %s; want 200 from %s with %q", status, body, op, got)
	}
}

// Class 1: a discriminator mapping to bare schema names.
func TestDiscriminatorBareNames(t *testing.T) {
	h := NewHandler(service{}, newEngine(t))
	status, body := send(t, h, "POST", "/scopes", "application/json", []byte(`{"type":"chat","chat_id":5}`))
	wantHit(t, status, body, "setScope", "chat 5")
	status, body = send(t, h, "POST", "/scopes", "application/json", []byte(`{"type":"default"}`))
	wantHit(t, status, body, "setScope", "default")
	// The schema's name is not a value the mapping declares: refused, by
	// the validator and the types alike.
	status, body = send(t, h, "POST", "/scopes", "application/json", []byte(`{"type":"BotCommandScopeChat","chat_id":5}`))
	if status != 400 || !strings.Contains(body, "chat") {
		t.Errorf("an unmapped value: %d %s; want 400 naming the allowed values", status, body)
	}
}

// multipartBody writes parts: name, filename ("" for none), content type
// ("" for none), content.
func multipartBody(t *testing.T, parts ...[4]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p[0])
		if p[1] != "" {
			cd += fmt.Sprintf(`; filename=%q`, p[1])
		}
		h.Set("Content-Disposition", cd)
		if p[2] != "" {
			h.Set("Content-Type", p[2])
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		pw.Write([]byte(p[3]))
	}
	w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// Class 2: a multipart property named file[], and (class 3) a part whose
// encoding says it holds a form.
func TestFileListParts(t *testing.T) {
	h := NewHandler(service{}, newEngine(t))
	body, ct := multipartBody(t,
		[4]string{"file[]", "a.txt", "text/plain", "alpha"},
		[4]string{"file[]", "b.txt", "text/plain", "beta"},
		[4]string{"meta", "", "application/x-www-form-urlencoded", "title=Guide+one&pages=2"})
	status, got := send(t, h, "POST", "/uploads", ct, body)
	wantHit(t, status, got, "upload", "a.txt:alpha b.txt:beta title=Guide one pages=2")

	body, ct = multipartBody(t, [4]string{"file[]", "a.txt", "", "alpha"})
	status, got = send(t, h, "POST", "/uploads", ct, body)
	wantHit(t, status, got, "upload", "a.txt:alpha")

	// The form part's members are typed by the property's schema.
	body, ct = multipartBody(t,
		[4]string{"file[]", "a.txt", "", "alpha"},
		[4]string{"meta", "", "application/x-www-form-urlencoded", "title=x&pages=many"})
	if status, got = send(t, h, "POST", "/uploads", ct, body); status != 400 || !strings.Contains(got, "pages") {
		t.Errorf("a form part with a member of the wrong type: %d %s; want 400 naming pages", status, got)
	}

	// The generated client sends a list of files as parts of that name, a
	// file whose member name a json tag cannot hold under that name, and
	// the form part as one part holding a form, as the encoding declares.
	var parts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		parts = partsOf(t, r.Header.Get("Content-Type"), b)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pages := int64(3)
	res, err := c.Upload(context.Background(), UploadRequest{Body: UploadRequestBody{
		File:       []idemtype.File{{Filename: "c.txt", Content: strings.NewReader("gamma")}, {Filename: "d.txt", Content: strings.NewReader("delta")}},
		CoverImage: &idemtype.File{Filename: "cover.png", Content: strings.NewReader("png")},
		Meta:       &UploadRequestBodyMeta{Title: "T & U", Pages: &pages},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.Response.(Upload200Response); !ok || r.Body.Got == nil || *r.Body.Got != "c.txt:gamma d.txt:delta cover cover.png:png title=T & U pages=3" {
		t.Errorf("client upload: %+v", res.Response)
	}
	want := []string{`meta application/x-www-form-urlencoded "pages=3&title=T+%26+U"`,
		`cover image (cover.png) application/octet-stream "png"`,
		`file[] (c.txt) application/octet-stream "gamma"`, `file[] (d.txt) application/octet-stream "delta"`}
	if !reflect.DeepEqual(parts, want) {
		t.Errorf("the client sent the parts\n%q\nwant\n%q", parts, want)
	}
}

// partsOf describes the parts of a multipart body: name, (file name),
// content type, content.
func partsOf(t *testing.T, contentType string, body []byte) []string {
	t.Helper()
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var out []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		s := p.FormName()
		if p.FileName() != "" {
			s += " (" + p.FileName() + ")"
		}
		out = append(out, fmt.Sprintf("%s %s %q", s, p.Header.Get("Content-Type"), b))
	}
}

// Class 2, in a form: a property named tags[].
func TestFormListName(t *testing.T) {
	status, body := send(t, NewHandler(service{}, newEngine(t)), "POST", "/tags", "application/x-www-form-urlencoded", []byte("tags[]=a&tags[]=b"))
	wantHit(t, status, body, "tag", "a,b")
}

// Class 4: text/json beside application/json, with the same schema.
func TestSecondJSONMediaType(t *testing.T) {
	status, body := send(t, NewHandler(service{}, newEngine(t)), "POST", "/messages", "text/json", []byte(`{"text":"hi","display name":"Ann"}`))
	if status != 200 || !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("text/json: %d %s", status, body)
	}
}

// Classes 5 and 6: type [string, null], and member names a json tag cannot
// hold, kept exact on the wire both ways.
func TestMemberNames(t *testing.T) {
	in := `{"-":"dash","a, b":true,"back` + "`" + `tick":"b","display name":"Ann","quote\"d":3,"tags[]":["x"],"text":null}`
	status, body := send(t, NewHandler(service{}, newEngine(t)), "POST", "/messages", "application/json", []byte(in))
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var sent, echoed map[string]any
	json.Unmarshal([]byte(in), &sent)
	if err := json.Unmarshal([]byte(body), &echoed); err != nil || !reflect.DeepEqual(sent, echoed) {
		t.Errorf("echoed %s (%v); want the members of %s", body, err, in)
	}

	three, yes, dash := int64(3), true, "dash"
	m := Message{DisplayName: "Ann", QuoteD: &three, AB: &yes, Minus: &dash}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"text":null,"-":"dash","a, b":true,"display name":"Ann","quote\"d":3}`; !jsonEqual(t, b, want) {
		t.Errorf("marshal: %s; want %s", b, want)
	}
	var back Message
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, m) {
		t.Errorf("round trip: %+v (%v); want %+v", back, err, m)
	}
	if err := json.Unmarshal([]byte(`{"text":"x"}`), &back); err == nil || !strings.Contains(err.Error(), "display name") {
		t.Errorf("a required member with a space missing: %v", err)
	}
	status, body = send(t, NewHandler(service{}, newEngine(t)), "POST", "/messages", "application/json", []byte(`{"text":1,"display name":"Ann"}`))
	if status != 400 || !strings.Contains(body, "text") {
		t.Errorf("text of the wrong type: %d %s", status, body)
	}
}

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	json.Unmarshal([]byte(want), &b)
	return reflect.DeepEqual(a, b)
}

// Class 7: a path parameter the path does not have is left out; the
// operation answers.
func TestPathParamNotInPath(t *testing.T) {
	status, body := send(t, NewHandler(service{}, newEngine(t)), "GET", "/items/abc", "", nil)
	wantHit(t, status, body, "getItem", "abc")
}

// Class 8: the user's CreateAnswerRequest keeps its name (the operation's
// request type is CreateAnswerRequest2), and Etc/GMT+1 and Etc/GMT-1 are
// Plus1 and Minus1.
func TestNames(t *testing.T) {
	var _ CreateAnswerRequest = CreateAnswerRequest{Answer: new(string)}
	var _ CreateAnswerRequest2 = CreateAnswerRequest2{Body: &CreateAnswerRequest{}}
	h := NewHandler(service{}, newEngine(t))
	status, body := send(t, h, "POST", "/answers", "application/json", []byte(`{"zone":"Etc/GMT-1"}`))
	wantHit(t, status, body, "createAnswer", "minus")
	status, body = send(t, h, "POST", "/answers", "application/json", []byte(`{"zone":"Etc/GMT+1"}`))
	wantHit(t, status, body, "createAnswer", "plus")
}

// Class 10: every path reaches the operation whose template comes first
// for it (a literal in the earliest segment where templates differ), also
// through routes merged for ServeMux.
func TestRoutesReachTheirOperations(t *testing.T) {
	h := NewHandler(service{}, newEngine(t))
	for _, tc := range []struct{ path, op, got string }{
		{"/shelves/7/books", "listBooks", "7"},
		{"/shelves/featured/dune", "getFeatured", "dune"},
		{"/shelves/featured/timeline", "getFeatured", "timeline"},
		{"/shelves/featured/books", "getFeatured", "books"},
		{"/shelves/7/timeline", "shelfTimeline", "7"},
		{"/lists/7/entries/latest", "latestEntry", "7"},
		{"/lists/all/entries/9", "allEntries", "9"},
		{"/lists/7/entries/9", "listSection", "7/entries/9"},
		{"/lists/7/pages/9", "listSection", "7/pages/9"},
	} {
		status, body := send(t, h, "GET", tc.path, "", nil)
		t.Run(tc.path, func(t *testing.T) { wantHit(t, status, body, tc.op, tc.got) })
	}
}

// Classes 2, 3 and 10: the request conformance.Requests builds for every
// operation (idemgen's tests send those to servers generated from real
// specs) reaches the handler.
func TestConformanceRequests(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := conformance.Requests("openapi.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Unimplemented{}, newEngine(t))
	var ops []string
	for _, q := range reqs {
		if q.Err != nil {
			t.Errorf("%s: %v", q.Operation, q.Err)
			continue
		}
		r := httptest.NewRequest(q.Method, q.Target, bytes.NewReader(q.Body))
		for k, v := range q.Header {
			r.Header[k] = v
		}
		if q.KeyHeader != "" {
			r.Header.Set(q.KeyHeader, q.NewKey())
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusNotImplemented {
			t.Errorf("%s: %s %s: %d %s", q.Operation, q.Method, q.Target, w.Code, w.Body)
		}
		ops = append(ops, q.Operation)
	}
	sort.Strings(ops)
	t.Logf("%d operations: %s", len(ops), strings.Join(ops, ", "))
}
