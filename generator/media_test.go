package generator

import (
	"strings"
	"testing"
)

// TestRangeResponseSendsJSON: a response declared with a range and a
// schema (springdoc declares every response */*) is typed and sent as
// JSON, with Content-Type application/json: a range is not a media type a
// body can have.
func TestRangeResponseSendsJSON(t *testing.T) {
	const spec = `openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /things:
    get:
      operationId: listThings
      responses:
        '200':
          description: ok
          content:
            '*/*':
              schema: {type: object, properties: {name: {type: string}}}
        '201':
          description: ok
          content:
            'application/*':
              schema: {type: object, properties: {name: {type: string}}}
        '202':
          description: ok
          content:
            'text/json':
              schema: {type: object, properties: {name: {type: string}}}
`
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	out := allSource(files)
	for _, want := range []string{
		`JSONResponse(200, "application/json", r.Body)`,
		`JSONResponse(201, "application/json", r.Body)`,
		`JSONResponse(202, "text/json", r.Body)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("generated code lacks %s", want)
		}
	}
	if strings.Contains(out, `Response(200, "*/*"`) || strings.Contains(out, `Response(201, "application/*"`) {
		t.Error("a range is sent as a Content-Type")
	}
}
