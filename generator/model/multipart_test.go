package model

import (
	"reflect"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestJSONParts: which multipart properties are JSON parts — the
// encoding's contentType first, then an encoding with style or explode
// (bracket notation), then the default of the property's type.
func TestJSONParts(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(`openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /x:
    post:
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              properties:
                obj: {type: object, properties: {a: {type: string}}}
                untyped: {properties: {a: {type: string}}}
                objText: {type: object}
                objDeep: {type: object}
                objExplode: {type: object}
                objsArray: {type: array, items: {type: object}}
                strings: {type: array, items: {type: string}}
                stringsJSON: {type: array, items: {type: string}}
                vendorJSON: {type: string}
                listJSON: {type: integer}
                plain: {type: string}
                file: {type: string, format: binary}
                objWithFile: {type: object, properties: {f: {type: string, format: binary}}}
            encoding:
              objText: {contentType: text/plain}
              objDeep: {style: deepObject}
              objExplode: {explode: true}
              stringsJSON: {contentType: application/json}
              vendorJSON: {contentType: application/vnd.api+json; charset=utf-8}
              listJSON: {contentType: 'text/plain, application/json'}
      responses:
        '200': {description: ok}
`))
	if err != nil {
		t.Fatal(err)
	}
	media := doc.Paths.Value("/x").Post.RequestBody.Value.Content["multipart/form-data"]
	b := &builder{}
	got := b.jsonParts(media)
	want := []string{"listJSON", "obj", "objsArray", "stringsJSON", "untyped", "vendorJSON"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jsonParts = %q, want %q", got, want)
	}
}
