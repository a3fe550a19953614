package idemimpl_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

func TestResponseBuilders(t *testing.T) {
	type body struct {
		ID string `json:"id"`
	}
	tests := []struct {
		name   string
		build  func() (*idem.Response, error)
		status int
		header http.Header
		body   string
	}{
		{
			name: "json with headers, empty header left out",
			build: func() (*idem.Response, error) {
				return idemimpl.JSONResponse(201, "application/json", body{"p1"}, "Location", "/p/p1", "ETag", "")
			},
			status: 201, header: http.Header{"Content-Type": {"application/json"}, "Location": {"/p/p1"}}, body: `{"id":"p1"}`,
		},
		{
			name: "json with a vendor media type",
			build: func() (*idem.Response, error) {
				return idemimpl.JSONResponse(200, "application/problem+json", map[string]int{"status": 200})
			},
			status: 200, header: http.Header{"Content-Type": {"application/problem+json"}}, body: `{"status":200}`,
		},
		{
			name:   "raw",
			build:  func() (*idem.Response, error) { return idemimpl.RawResponse(200, "application/pdf", []byte("%PDF")) },
			status: 200, header: http.Header{"Content-Type": {"application/pdf"}}, body: "%PDF",
		},
		{
			name:   "empty",
			build:  func() (*idem.Response, error) { return idemimpl.EmptyResponse(204, "X-Request-Id", "r1") },
			status: 204, header: http.Header{"X-Request-Id": {"r1"}}, body: "",
		},
		{
			name:   "odd header list ignores the dangling name",
			build:  func() (*idem.Response, error) { return idemimpl.EmptyResponse(202, "X-A") },
			status: 202, header: http.Header{}, body: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.build()
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.status {
				t.Errorf("status %d, want %d", resp.Status, tt.status)
			}
			if !reflect.DeepEqual(resp.Header, tt.header) {
				t.Errorf("header %v, want %v", resp.Header, tt.header)
			}
			if string(resp.Body) != tt.body {
				t.Errorf("body %q, want %q", resp.Body, tt.body)
			}
		})
	}
}

func TestJSONResponseEncodingError(t *testing.T) {
	if _, err := idemimpl.JSONResponse(200, "application/json", math.Inf(1)); err == nil {
		t.Error("+Inf encoded as JSON")
	}
}

func TestWriteResponse(t *testing.T) {
	w := httptest.NewRecorder()
	resp, _ := idemimpl.JSONResponse(201, "application/json", map[string]string{"a": "b"}, "Location", "/x")
	idemimpl.WriteResponse(w, resp)
	if w.Code != 201 || w.Header().Get("Location") != "/x" || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != `{"a":"b"}` {
		t.Errorf("got %d %v %q", w.Code, w.Header(), w.Body)
	}
}
