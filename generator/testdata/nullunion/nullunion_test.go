package api

// Compiled into the package generated from openapi.yaml beside it and run by
// generator.TestNullUnion over real HTTP: OpenAPI 3.1's nullable unions
// (issue 37). A member {type: "null"}, {const: null} or {enum: [null]} of
// a oneOf or anyOf makes the union nullable and matches null only: before,
// it was a variant typed any that matched every value, so {"a": "x"}
// matched two members (400) and {"a": 5} none it should have (accepted).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// recorder keeps the request the handler last received.
type recorder struct {
	Unimplemented
	got *PutNRequest
}

func (r *recorder) PutN(ctx context.Context, req PutNRequest) (PutNResponse, error) {
	*r.got = req
	return PutN204Response{}, nil
}

func TestNullUnions(t *testing.T) {
	var got PutNRequest
	srv := httptest.NewServer(NewHandler(&recorder{got: &got}, nil))
	defer srv.Close()
	put := func(query, body string) int {
		t.Helper()
		req, err := http.NewRequest("PUT", srv.URL+"/n"+query, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	valid := []string{
		`{"a":"x"}`, `{"a":null}`,
		`{"b":"x"}`, `{"b":["x"]}`, `{"b":null}`,
		`{"c":"x"}`, `{"c":null}`,
		`{"d":null}`,
		`{"e":5}`, `{"e":null}`,
		`{"f":"png"}`, `{"f":null}`,
		`{"g":null}`, `{"g":"x"}`, `{"g":3}`,
		`{}`,
	}
	for _, body := range valid {
		if code := put("", body); code != http.StatusNoContent {
			t.Errorf("PUT /n %s: %d, want 204 (the handler)", body, code)
		}
	}
	invalid := []string{
		`{"a":5}`, `{"a":["x"]}`,
		`{"b":5}`, `{"b":{}}`,
		`{"c":5}`,
		`{"d":5}`, `{"d":"x"}`, `{"d":{}}`,
		`{"e":"x"}`,
		`{"f":"bogus"}`,
		`{"g":true}`,
	}
	for _, body := range invalid {
		if code := put("", body); code != http.StatusBadRequest {
			t.Errorf("PUT /n %s: %d, want 400", body, code)
		}
	}
	for query, want := range map[string]int{
		"?image_type=png": http.StatusNoContent, "?image_type=jpg": http.StatusNoContent,
		"?image_type=bogus": http.StatusBadRequest, "?image_type=5": http.StatusBadRequest,
	} {
		if code := put(query, `{}`); code != want {
			t.Errorf("PUT /n%s: %d, want %d", query, code, want)
		}
	}

	// What reaches the handler is typed as the member that matched.
	if put("?image_type=jpg", `{"a":"x","b":["y","z"],"c":null,"e":7,"f":"png","g":"s"}`) != http.StatusNoContent {
		t.Fatal("a valid request is refused")
	}
	b := got.Body
	a, _ := b.A.Value()
	bv, _ := b.B.Value()
	e, _ := b.E.Value()
	f, _ := b.F.Value()
	g, _ := b.G.Value()
	var summary []string
	summary = append(summary, "a="+a)
	if bv.StringList != nil {
		summary = append(summary, "b="+strings.Join(*bv.StringList, ","))
	}
	summary = append(summary, fmt.Sprintf("c null %t", b.C.IsNull()), fmt.Sprintf("e=%d", e), "f="+string(f))
	if g.String != nil {
		summary = append(summary, "g="+*g.String)
	}
	if got.ImageType != nil {
		summary = append(summary, "image_type="+string(*got.ImageType))
	}
	if s, want := strings.Join(summary, " "), "a=x b=y,z c null true e=7 f=png g=s image_type=jpg"; s != want {
		t.Errorf("the handler got %s, want %s", s, want)
	}
}
