package generator

import (
	"strings"
	"testing"
)

// clientQuerySpec: parameters whose values are objects, in each style the
// client writes member by member: in the query deepObject (a struct with
// a nested object, a map, a union of a scalar and an object, as Stripe's
// created), form (a struct, exploded and not) and content
// application/json; a header (simple) and a cookie (form, exploded).
const clientQuerySpec = `openapi: 3.0.3
info: {title: things, version: '1'}
paths:
  /things:
    get:
      operationId: listThings
      parameters:
        - name: filter
          in: query
          style: deepObject
          explode: true
          schema:
            type: object
            properties:
              status: {type: string, enum: [open, closed]}
              amount:
                type: object
                properties:
                  gt: {type: integer}
                  lt: {type: integer}
        - name: metadata
          in: query
          style: deepObject
          explode: true
          schema: {type: object, additionalProperties: {type: string}}
        - name: created
          in: query
          style: deepObject
          explode: true
          schema:
            anyOf:
              - {type: integer}
              - type: object
                properties:
                  gt: {type: integer}
                  lte: {type: integer}
        - name: color
          in: query
          style: form
          explode: false
          schema: {type: object, properties: {r: {type: integer}, g: {type: integer}}}
        - name: shade
          in: query
          style: form
          explode: true
          schema: {type: object, properties: {light: {type: boolean}, name: {type: string}}}
        - name: X-Point
          in: header
          schema: {type: object, properties: {x: {type: integer}, y: {type: integer}}}
        - name: prefs
          in: cookie
          explode: true
          schema: {type: object, additionalProperties: {type: string}}
        - name: q
          in: query
          content:
            application/json:
              schema: {type: object, properties: {text: {type: string}, tags: {type: array, items: {type: string}}}}
      responses:
        '204': {description: listed}
`

// clientQueryTest runs in the generated package: each call's request, as
// the server decoded it, is the one the client was given.
const clientQueryTest = `package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

type srv struct {
	Unimplemented
	got []ListThingsRequest
}

func (s *srv) ListThings(ctx context.Context, req ListThingsRequest) (ListThingsResponse, error) {
	s.got = append(s.got, req)
	return ListThings204Response{}, nil
}

func ptr[T any](v T) *T { return &v }

func TestClientQuery(t *testing.T) {
	s := &srv{}
	hs := httptest.NewServer(NewHandler(s, nil))
	defer hs.Close()
	c, err := NewClient(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	open := ListThingsFilterStatusOpen
	reqs := []ListThingsRequest{
		{},
		{
			Filter:   &ListThingsFilter{Status: &open, Amount: &ListThingsFilterAmount{Gt: ptr(int64(5)), Lt: ptr(int64(-7))}},
			Metadata: map[string]string{"order": "a=b&c", "note": "x y[z]"},
			Created:  &ListThingsCreated{Int64: ptr(int64(1700000000))},
			Color:    &ListThingsColor{R: ptr(int64(100)), G: ptr(int64(200))},
			Shade:    &ListThingsShade{Light: ptr(true), Name: ptr("sea green")},
			Q:        &ListThingsQ{Text: ptr("héllo, world"), Tags: []string{"a", "b"}},
			XPoint:   &ListThingsXPoint{X: ptr(int64(3)), Y: ptr(int64(-4))},
			Prefs:    map[string]string{"theme": "dark", "lang": "fr"},
		},
		{
			Created: &ListThingsCreated{ListThingsCreatedVariant2: &ListThingsCreatedVariant2{Gt: ptr(int64(1)), Lte: ptr(int64(9))}},
			Shade:   &ListThingsShade{Light: ptr(false)},
		},
	}
	for i, req := range reqs {
		if _, err := c.ListThings(context.Background(), req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		want, _ := json.Marshal(req)
		got, _ := json.Marshal(s.got[i])
		if string(got) != string(want) {
			t.Errorf("call %d: the server decoded\n%s\nthe client was given\n%s", i, got, want)
		}
	}
}
`

// TestClientQueryObjects: the generated client writes parameters whose
// values are objects as the generated server reads them, in every style (Stripe's description has 306 deepObject query parameters, whose
// client did not compile before).
func TestClientQueryObjects(t *testing.T) {
	cfg := Config{Spec: "openapi.yaml", SpecData: []byte(clientQuerySpec), Package: "api", Output: "out", Client: ClientConfig{Enabled: true}}
	files, _, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := ""
	for _, f := range files {
		if f.Name == "client.gen.go" {
			client = string(f.Content)
		}
	}
	for _, want := range []string{
		`idemclient.QueryDeepObject(r, "filter", req.Filter)`,
		`idemclient.QueryDeepObject(r, "metadata", req.Metadata)`,
		`idemclient.QueryDeepObject(r, "created", req.Created)`,
		`idemclient.QueryFormObject(r, "color", req.Color, false)`,
		`idemclient.QueryFormObject(r, "shade", req.Shade, true)`,
		`idemclient.QueryJSON(r, "q", req.Q)`,
		`idemclient.HeaderObject(r, "X-Point", req.XPoint, false)`,
		`idemclient.CookieObject(r, "prefs", req.Prefs, true)`,
	} {
		if !strings.Contains(client, want) {
			t.Errorf("client.gen.go lacks %s", want)
		}
	}
	if testing.Short() {
		return
	}
	modulePackage(t, "clientquery", append(files, File{Name: "clientquery_test.go", Content: []byte(clientQueryTest)}))
	moduleResult(t, "clientquery")
}
