package idemimpl_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

func TestCheckRequired(t *testing.T) {
	tests := []struct {
		name, body string
		want       string // error text, "" for none
	}{
		{"all present", `{"a":1,"b":null}`, ""},
		{"first missing named", `{"b":1}`, `property "a" is required`},
		{"second missing", `{"a":1}`, `property "b" is required`},
		{"empty object", `{}`, `property "a" is required`},
		{"null is left to json", `null`, ""},
		{"not an object", `[1]`, "json: cannot unmarshal"},
		{"invalid JSON", `{`, "unexpected end of JSON input"},
		// Names are read without decoding values: an escaped name is
		// unescaped, a name inside a member's value is not a member, and
		// duplicates (which json.Unmarshal takes) still count.
		{"escaped name", `{"\u0061":1,"b":2}`, ""},
		{"nested name is no member", `{"x":{"a":1},"b":[{"a":2}]}`, `property "a" is required`},
		{"duplicate names", `{"a":1,"a":2,"b":3}`, ""},
		{"trailing data", `{"a":1,"b":2} x`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := idemimpl.CheckRequired([]byte(tt.body), "a", "b")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

type item struct {
	Name string `json:"name"`
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name, body string
		required   bool
		want       string // decoded Name
		cause      error  // nil: no error; errAny: some request error
	}{
		{name: "object", body: `{"name":"x"}`, required: true, want: "x"},
		{name: "unknown properties accepted", body: `{"name":"x","extra":1}`, required: true, want: "x"},
		{name: "empty required", body: ``, required: true, cause: idemimpl.ErrMissing},
		{name: "white space required", body: " \n\t", required: true, cause: idemimpl.ErrMissing},
		{name: "empty optional", body: ``},
		{name: "white space optional", body: "  "},
		{name: "malformed", body: `{"name":`, required: false, cause: errAny},
		{name: "wrong type", body: `{"name":1}`, required: true, cause: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v item
			err := idemimpl.DecodeJSON([]byte(tt.body), &v, tt.required)
			if tt.cause == nil {
				if err != nil {
					t.Fatal(err)
				}
				if v.Name != tt.want {
					t.Errorf("Name = %q, want %q", v.Name, tt.want)
				}
				return
			}
			if tt.cause == errAny {
				requestError(t, err, "body", nil)
			} else {
				requestError(t, err, "body", tt.cause)
			}
		})
	}
}

var errAny = errors.New("any request error")

func TestRawBody(t *testing.T) {
	if b, err := idemimpl.RawBody([]byte("%PDF"), true); err != nil || string(b) != "%PDF" {
		t.Errorf("got %q, %v", b, err)
	}
	if b, err := idemimpl.RawBody(nil, false); err != nil || b != nil {
		t.Errorf("optional empty: got %q, %v", b, err)
	}
	_, err := idemimpl.RawBody(nil, true)
	requestError(t, err, "body", idemimpl.ErrMissing)
}

func TestReadBody(t *testing.T) {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789"))
	if b, err := idemimpl.ReadBody(w, r, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("at the limit: got %q, %v", b, err)
	}
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789"))
	_, err := idemimpl.ReadBody(w, r, 9)
	var mb *http.MaxBytesError
	if !errors.As(err, &mb) {
		t.Errorf("over the limit: error %v, want *http.MaxBytesError", err)
	}
}

// TestUnmarshalRequired: the UnmarshalJSON of a generated struct decodes
// first (a type error wins), then refuses a missing required property.
func TestUnmarshalRequired(t *testing.T) {
	type plain struct {
		A int `json:"a"`
		B *int
	}
	var v plain
	if err := idemimpl.UnmarshalRequired([]byte(`{"a":1,"b":2}`), &v, "a", "b"); err != nil || v.A != 1 || v.B == nil || *v.B != 2 {
		t.Errorf("got %+v, %v", v, err)
	}
	if err := idemimpl.UnmarshalRequired([]byte(`{"a":1}`), &v, "a", "b"); err == nil || err.Error() != `property "b" is required` {
		t.Errorf("missing b: error %v", err)
	}
	if err := idemimpl.UnmarshalRequired([]byte(`{"a":"x"}`), &v, "a", "b"); err == nil || !strings.Contains(err.Error(), "cannot unmarshal string") {
		t.Errorf("a string for an int: error %v, want the decoder's", err)
	}
}

func TestOneOf(t *testing.T) {
	if !idemimpl.OneOf(color("green"), "red", "green") {
		t.Error("green is one of red, green")
	}
	if idemimpl.OneOf(color("blue"), "red", "green") || idemimpl.OneOf(color("")) {
		t.Error("blue, or anything, is one of red, green or of nothing")
	}
}

func TestUnmarshalEnum(t *testing.T) {
	var c color
	if err := idemimpl.UnmarshalEnum([]byte(`"green"`), &c); err != nil || c != "green" {
		t.Errorf("got %q, %v", c, err)
	}
	if err := idemimpl.UnmarshalEnum([]byte(`"blue"`), &c); err == nil || err.Error() != `"blue" is not an allowed value` {
		t.Errorf("undeclared: error %v", err)
	}
	if err := idemimpl.UnmarshalEnum([]byte(`3`), &c); err == nil {
		t.Error("a number decoded as an enum")
	}
	if c != "green" {
		t.Errorf("a refused value changed the enum to %q", c)
	}
}

func TestRawOrNull(t *testing.T) {
	if got := string(idemimpl.RawOrNull(nil)); got != "null" {
		t.Errorf("nil: %q", got)
	}
	if got := string(idemimpl.RawOrNull(json.RawMessage(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("value: %q", got)
	}
}

// The 400 that idem makes of a request error names the parameter.
func TestRequestErrorIsBadRequest(t *testing.T) {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	idem.WriteProblem(w, r, idemimpl.DecodeJSON(nil, new(item), true))
	if w.Code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", w.Code)
	}
}

func requestError(t *testing.T, err error, where string, cause error) {
	t.Helper()
	var re *idem.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not an *idem.RequestError", err, err)
	}
	if re.Where != where {
		t.Errorf("Where = %q, want %q", re.Where, where)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Errorf("error %v does not wrap %v", err, cause)
	}
}

type color string

func (c color) Valid() bool { return c == "red" || c == "green" }

// TestCheckRequiredManyNames: past the 64 names scanned in one pass, the
// check is still made (by encoding/json).
func TestCheckRequiredManyNames(t *testing.T) {
	names := make([]string, 70)
	var b strings.Builder
	b.WriteString("{")
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
		if i < 69 {
			fmt.Fprintf(&b, `"n%d":%d,`, i, i)
		}
	}
	b.WriteString(`"x":0}`)
	if err := idemimpl.CheckRequired([]byte(b.String()), names...); err == nil || err.Error() != `property "n69" is required` {
		t.Errorf("error %v, want n69 missing", err)
	}
}

// TestUnmarshalTypedErrors: a type with no untyped value inside is decoded
// without a Decoder, with the Decoder's errors all the same.
func TestUnmarshalTypedErrors(t *testing.T) {
	type typed struct {
		A int64    `json:"a"`
		B []string `json:"b"`
	}
	for _, body := range []string{`{"a":"x"}`, `{"a":1} {}`, `{"a":1`, `{"b":[1]}`, `[]`} {
		var got, want typed
		err := idemimpl.Unmarshal([]byte(body), &got)
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		werr := dec.Decode(&want)
		if werr == nil {
			werr = errors.New("unexpected data after the JSON value")
		}
		if err == nil || err.Error() != werr.Error() && !(errors.Is(werr, io.EOF) && err == io.ErrUnexpectedEOF) {
			t.Errorf("Unmarshal(%s): %v, want %v", body, err, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Unmarshal(%s) left %+v, the Decoder %+v", body, got, want)
		}
	}
	var ok typed
	if err := idemimpl.Unmarshal([]byte(`{"a":2,"b":["x"]}`), &ok); err != nil || ok.A != 2 || len(ok.B) != 1 {
		t.Errorf("Unmarshal: %+v, %v", ok, err)
	}
}

// TestUnmarshalAsV1: where a type holds no untyped value, what Unmarshal
// decodes is what encoding/json decodes, in the corners where JSON
// libraries part ways: names matched without case, a repeated name (the
// last wins), invalid UTF-8, ",string", embedded fields, null, a field of
// a type with its own UnmarshalJSON.
func TestUnmarshalAsV1(t *testing.T) {
	type Inner struct {
		X int `json:"x"`
	}
	type typed struct {
		Inner
		A     int64             `json:"a"`
		S     string            `json:"s"`
		N     int64             `json:"n,string"`
		P     *int              `json:"p"`
		M     map[string]string `json:"m"`
		E     color             `json:"e"`
		Other bool
	}
	for _, body := range []string{
		`{"A":1,"S":"x","OTHER":true}`, `{"a":1,"a":2}`, "{\"s\":\"\xff\"}", `{"n":"12"}`,
		`{"x":3,"p":null,"m":{"k":"v"}}`, `{"p":5,"m":null}`, `{"e":"red"}`, `{"e":"blue"}`, `{"a":1.5}`,
	} {
		var got, want typed
		err := idemimpl.Unmarshal([]byte(body), &got)
		werr := json.Unmarshal([]byte(body), &want)
		if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("Unmarshal(%s) = %+v, %v; encoding/json: %+v, %v", body, got, err, want, werr)
		}
	}
}

// TestUnmarshalExact: a number in an untyped value is a json.Number with
// its digits (9007199254740993 would be 9007199254740992 as a float64), at
// any depth, through the helpers generated types decode with; typed
// numbers are unaffected.
func TestUnmarshalExact(t *testing.T) {
	const big = "9007199254740993"
	var v struct {
		Any   any            `json:"any"`
		Map   map[string]any `json:"map"`
		List  []any          `json:"list"`
		Typed int64          `json:"typed"`
	}
	if err := idemimpl.Unmarshal([]byte(`{"any":`+big+`,"map":{"n":{"m":[`+big+`]}},"list":[`+big+`],"typed":`+big+`}`), &v); err != nil {
		t.Fatal(err)
	}
	nested := v.Map["n"].(map[string]any)["m"].([]any)[0]
	if v.Any != json.Number(big) || nested != json.Number(big) || v.List[0] != json.Number(big) || v.Typed != 9007199254740993 {
		t.Errorf("decoded %#v, %#v", v, nested)
	}
	if err := idemimpl.Unmarshal([]byte(`{} {}`), &v); err == nil {
		t.Error("data after the value accepted")
	}
	var extra map[string]any
	if err := idemimpl.UnmarshalAdditional([]byte(`{"declared":1,"x":`+big+`}`), &extra, "declared"); err != nil || extra["x"] != json.Number(big) {
		t.Errorf("UnmarshalAdditional: %#v, %v", extra, err)
	}
	var p *any
	if err := idemimpl.DecodeVariant([]byte(big), &p); err != nil || *p != json.Number(big) {
		t.Errorf("DecodeVariant: %v, %v", p, err)
	}
	var n idemtype.Nullable[any]
	if err := json.Unmarshal([]byte(big), &n); err != nil {
		t.Fatal(err)
	}
	if x, _ := n.Value(); x != json.Number(big) {
		t.Errorf("Nullable[any]: %#v", x)
	}
}

// reqBody decodes as a generated struct with required properties does.
type reqBody struct {
	A int    `json:"a"`
	R string `json:"r"`
}

func (v *reqBody) UnmarshalJSON(b []byte) error {
	type plain reqBody
	return idemimpl.UnmarshalRequired(b, (*plain)(v), "a", "r")
}

// TestBodyRequiredChecked: the type's own check of its required members
// is skipped only for members the validator required of the request, from
// requests decoded side by side: a read-only member is not required of a
// request (the validator lets it be absent), so the type's check still
// refuses a body without it.
func TestBodyRequiredChecked(t *testing.T) {
	schemas := &idemimpl.Schemas{List: []idemimpl.Schema{
		{},
		{Types: idemimpl.TypeObject, Props: []idemimpl.Prop{{Name: "a", Schema: 2, Required: true}, {Name: "r", Schema: 3, Required: true}}},
		{Types: idemimpl.TypeInteger},
		{Types: idemimpl.TypeString},
		{Types: idemimpl.TypeObject, Props: []idemimpl.Prop{{Name: "a", Schema: 2, Required: true}, {Name: "r", Schema: 5, Required: true}}},
		{Types: idemimpl.TypeString, ReadOnly: true},
	}}
	decode := func(schema int, body string) (reqBody, error) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Content-Type", "application/json")
		q := idemimpl.NewRequest(r, schemas)
		var v reqBody
		q.Body([]byte(body), &idemimpl.Body{Required: true, Media: []idemimpl.Media{{Type: "application/json", Decode: idemimpl.AsJSON, Schema: schema}}}, &v)
		return v, q.Err()
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if v, err := decode(1, fmt.Sprintf(`{"a":%d,"r":"x"}`, g*1000+i)); err != nil || v.A != g*1000+i || v.R != "x" {
					t.Errorf("required members present: %+v, %v", v, err)
					return
				}
				if _, err := decode(1, `{"a":1}`); err == nil || !strings.Contains(err.Error(), "required") {
					t.Errorf("r absent: %v, want it required", err)
					return
				}
				if _, err := decode(4, `{"a":1}`); err == nil || !strings.Contains(err.Error(), `property "r" is required`) {
					t.Errorf("read-only r absent: %v, want the type's own check to refuse it", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestReadBodyRefusesBeforeTheBody: ReadBody, what generated handlers of
// operations that are not idempotent read bodies with, answers a request
// whose Content-Length is over the limit with 413 before reading the body:
// a client that sent Expect: 100-continue never gets 100 Continue, and one
// that announces a body and sends none is not waited for.
func TestReadBodyRefusesBeforeTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := idemimpl.ReadBody(w, r, 1<<10); err != nil {
			var e *idem.Engine
			e.WriteError(w, r, idem.ProfileDefault, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for _, expect := range []string{"Expect: 100-continue\r\n", ""} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Minute)) // fails a server that waits for the body, instead of hanging
		fmt.Fprintf(conn, "POST /quote HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n", expect, 100<<20)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: no answer before the body: %v", expect, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("%q: %d before the body, want 413", expect, resp.StatusCode)
		}
	}
}
