package idemimpl_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

type color string

func (c color) Valid() bool { return c == "red" || c == "green" }

// request builds a request for GET /items/{id} with the given query, headers
// and cookie, routed through a ServeMux so that PathValue works.
func request(t *testing.T, target string, header http.Header) *http.Request {
	t.Helper()
	var got *http.Request
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(_ http.ResponseWriter, r *http.Request) { got = r })
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for k, vs := range header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	mux.ServeHTTP(httptest.NewRecorder(), r)
	if got == nil {
		t.Fatalf("%s did not match GET /items/{id}", target)
	}
	return got
}

// requestError checks that err is an *idem.RequestError for where, wrapping
// cause when cause is not nil.
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

func TestParamRequired(t *testing.T) {
	tests := []struct {
		name, target string
		header       http.Header
		in, key      string
		parse        func(string) (any, error)
		want         any
		where        string // "" for no error
		cause        error
	}{
		{name: "path uuid", target: "/items/0190b2a4-7c35-7d2e-9c8f-1b2a3c4d5e6f", in: "path", key: "id",
			parse: wrap(idemimpl.ParseUUID), want: uuid.MustParse("0190b2a4-7c35-7d2e-9c8f-1b2a3c4d5e6f")},
		{name: "path bad uuid", target: "/items/nope", in: "path", key: "id",
			parse: wrap(idemimpl.ParseUUID), where: `path parameter "id"`},
		{name: "query int32", target: "/items/1?limit=25", in: "query", key: "limit",
			parse: wrap(idemimpl.ParseInt32), want: int32(25)},
		{name: "query int32 first value wins", target: "/items/1?limit=1&limit=2", in: "query", key: "limit",
			parse: wrap(idemimpl.ParseInt32), want: int32(1)},
		{name: "query missing", target: "/items/1", in: "query", key: "limit",
			parse: wrap(idemimpl.ParseInt32), where: `query parameter "limit"`, cause: idemimpl.ErrMissing},
		{name: "int32 overflow", target: "/items/1?limit=2147483648", in: "query", key: "limit",
			parse: wrap(idemimpl.ParseInt32), where: `query parameter "limit"`, cause: strconv.ErrRange},
		{name: "int32 not a number", target: "/items/1?limit=ten", in: "query", key: "limit",
			parse: wrap(idemimpl.ParseInt32), where: `query parameter "limit"`, cause: strconv.ErrSyntax},
		{name: "int64 max", target: "/items/1?n=9223372036854775807", in: "query", key: "n",
			parse: wrap(idemimpl.ParseInt64), want: int64(9223372036854775807)},
		{name: "int64 overflow", target: "/items/1?n=9223372036854775808", in: "query", key: "n",
			parse: wrap(idemimpl.ParseInt64), where: `query parameter "n"`, cause: strconv.ErrRange},
		{name: "bool", target: "/items/1?all=true", in: "query", key: "all",
			parse: wrap(idemimpl.ParseBool), want: true},
		{name: "float64", target: "/items/1?x=1.5", in: "query", key: "x",
			parse: wrap(idemimpl.ParseFloat64), want: 1.5},
		{name: "float32", target: "/items/1?x=0.25", in: "query", key: "x",
			parse: wrap(idemimpl.ParseFloat32), want: float32(0.25)},
		{name: "date-time", target: "/items/1?since=2026-01-02T03:04:05Z", in: "query", key: "since",
			parse: wrap(idemimpl.ParseTime), want: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{name: "date-time without zone", target: "/items/1?since=2026-01-02T03:04:05", in: "query", key: "since",
			parse: wrap(idemimpl.ParseTime), where: `query parameter "since"`},
		{name: "date only is not a date-time", target: "/items/1?since=2026-01-02", in: "query", key: "since",
			parse: wrap(idemimpl.ParseTime), where: `query parameter "since"`},
		{name: "enum", target: "/items/1?color=red", in: "query", key: "color",
			parse: wrap(idemimpl.ParseEnum[color]), want: color("red")},
		{name: "enum undeclared", target: "/items/1?color=blue", in: "query", key: "color",
			parse: wrap(idemimpl.ParseEnum[color]), where: `query parameter "color"`},
		{name: "header", target: "/items/1", header: http.Header{"X-Trace-Id": {"abc"}}, in: "header", key: "X-Trace-ID",
			parse: wrap(idemimpl.ParseString), want: "abc"},
		{name: "cookie", target: "/items/1", header: http.Header{"Cookie": {"session=s1"}}, in: "cookie", key: "session",
			parse: wrap(idemimpl.ParseString), want: "s1"},
		{name: "cookie missing", target: "/items/1", in: "cookie", key: "session",
			parse: wrap(idemimpl.ParseString), where: `cookie parameter "session"`, cause: idemimpl.ErrMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(t, tt.target, tt.header)
			got, err := idemimpl.ParamRequired(r, tt.in, tt.key, tt.parse)
			if tt.where != "" {
				requestError(t, err, tt.where, tt.cause)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// wrap turns a typed parse function into one returning any, so that one
// table covers every type.
func wrap[T any](parse func(string) (T, error)) func(string) (any, error) {
	return func(s string) (any, error) { return parse(s) }
}

func TestParamOptional(t *testing.T) {
	r := request(t, "/items/1?limit=7&bad=x", nil)
	got, err := idemimpl.ParamOptional(r, "query", "limit", idemimpl.ParseInt32)
	if err != nil || got == nil || *got != 7 {
		t.Errorf("present: got %v, %v; want 7", got, err)
	}
	got, err = idemimpl.ParamOptional(r, "query", "absent", idemimpl.ParseInt32)
	if err != nil || got != nil {
		t.Errorf("absent: got %v, %v; want nil, nil", got, err)
	}
	_, err = idemimpl.ParamOptional(r, "query", "bad", idemimpl.ParseInt32)
	requestError(t, err, `query parameter "bad"`, strconv.ErrSyntax)
}

func TestParamList(t *testing.T) {
	tests := []struct {
		name, target      string
		header            http.Header
		in, key           string
		required, explode bool
		want              []int32
		where             string
		cause             error
	}{
		{name: "exploded query repeats", target: "/items/1?n=1&n=2&n=3", in: "query", key: "n", explode: true, want: []int32{1, 2, 3}},
		{name: "exploded query keeps commas", target: "/items/1?n=1,2", in: "query", key: "n", explode: true,
			where: `query parameter "n"`, cause: strconv.ErrSyntax},
		{name: "form query splits commas", target: "/items/1?n=1,%202,3", in: "query", key: "n", want: []int32{1, 2, 3}},
		{name: "form query joins repeats", target: "/items/1?n=1,2&n=3", in: "query", key: "n", want: []int32{1, 2, 3}},
		{name: "header always splits", target: "/items/1", header: http.Header{"X-N": {"4, 5"}}, in: "header", key: "X-N", explode: true, want: []int32{4, 5}},
		{name: "optional absent", target: "/items/1", in: "query", key: "n", explode: true, want: nil},
		{name: "required absent", target: "/items/1", in: "query", key: "n", required: true, explode: true,
			where: `query parameter "n"`, cause: idemimpl.ErrMissing},
		{name: "element overflows", target: "/items/1?n=1&n=99999999999", in: "query", key: "n", explode: true,
			where: `query parameter "n"`, cause: strconv.ErrRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(t, tt.target, tt.header)
			got, err := idemimpl.ParamList(r, tt.in, tt.key, tt.required, tt.explode, idemimpl.ParseInt32)
			if tt.where != "" {
				requestError(t, err, tt.where, tt.cause)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseEnumList(t *testing.T) {
	r := request(t, "/items/1?c=red&c=blue", nil)
	_, err := idemimpl.ParamList(r, "query", "c", false, true, idemimpl.ParseEnum[color])
	requestError(t, err, `query parameter "c"`, nil)
	if want := `query parameter "c": "blue" is not an allowed value`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestParseUUIDCases(t *testing.T) {
	for _, s := range []string{"0190B2A4-7C35-7D2E-9C8F-1B2A3C4D5E6F", "0190b2a4-7c35-7d2e-9c8f-1b2a3c4d5e6f"} {
		if _, err := idemimpl.ParseUUID(s); err != nil {
			t.Errorf("ParseUUID(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "0190b2a4", "0190b2a4-7c35-7d2e-9c8f-1b2a3c4d5e6g"} {
		if _, err := idemimpl.ParseUUID(s); err == nil {
			t.Errorf("ParseUUID(%q) succeeded", s)
		}
	}
}
