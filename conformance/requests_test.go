package conformance

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
)

// TestRequestsEncodeAsDeclared: Requests serialises what it generates as
// the spec declares it (deepObject in Stripe's bracket notation, exploded
// form arrays, a discriminated member named by its mapping, multipart
// parts, a credential), and offers wrong-typed variants to refuse.
func TestRequestsEncodeAsDeclared(t *testing.T) {
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
x-idempotent: {}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
  schemas:
    Card: {type: object, required: [kind, number], properties: {kind: {type: string}, number: {type: string}}}
    Bank: {type: object, required: [kind, iban], properties: {kind: {type: string}, iban: {type: string}}}
security: [{key: []}]
paths:
  /charges:
    get:
      operationId: listCharges
      parameters:
        - {name: created, in: query, style: deepObject, explode: true, schema: {type: object, properties: {gt: {type: integer}}}}
        - {name: lines, in: query, style: deepObject, schema: {type: array, items: {type: object, required: [amount], properties: {amount: {type: integer}}}}}
        - {name: tag, in: query, schema: {type: array, items: {type: string}}}
      responses: {"200": {description: ok}}
    post:
      operationId: pay
      requestBody:
        required: true
        content:
          application/json:
            schema:
              oneOf: [{$ref: '#/components/schemas/Card'}, {$ref: '#/components/schemas/Bank'}]
              discriminator: {propertyName: kind, mapping: {card: '#/components/schemas/Card', bank: '#/components/schemas/Bank'}}
      responses: {"201": {description: ok}}
  /files:
    post:
      operationId: upload
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {type: object, required: [file, purpose], properties: {file: {type: string, format: binary}, purpose: {type: string, enum: [dispute]}}}
      responses: {"201": {description: ok}}
`
	reqs, err := Requests("openapi.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Request{}
	for _, q := range reqs {
		if q.Err != nil {
			t.Fatalf("%s: %v", q.Operation, q.Err)
		}
		if q.Header.Get("X-Key") == "" {
			t.Errorf("%s: no credential for the key scheme", q.Operation)
		}
		byID[q.Operation] = q
	}
	list := byID["listCharges"]
	for _, want := range []string{"created%5Bgt%5D=1", "lines%5B0%5D%5Bamount%5D=1", "tag=conformance"} {
		if !strings.Contains(list.Target, want) {
			t.Errorf("listCharges target %s lacks %s", list.Target, want)
		}
	}
	if len(list.Malformed) == 0 || !strings.Contains(list.Malformed[0].Target, "conformance-wrong-type") {
		t.Errorf("listCharges: no wrong-typed query parameter: %+v", list.Malformed)
	}
	if pay := byID["pay"]; !strings.Contains(string(pay.Body), `"kind":"card"`) || pay.KeyHeader == "" || pay.NewKey() == "" {
		t.Errorf("pay: body %s, key header %q", pay.Body, pay.KeyHeader)
	}
	up := byID["upload"]
	if ct := up.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/form-data; boundary=") ||
		!strings.Contains(string(up.Body), `name="file"; filename="conformance.bin"`) || !strings.Contains(string(up.Body), "dispute") {
		t.Errorf("upload: %s\n%s", ct, up.Body)
	}
}

// TestRequestsContentParameters: a parameter declared with content
// (content: application/json) gets a value of its media type's schema,
// sent as JSON, in the query, a header and the path: not the string
// "conformance" a parameter without a schema gets.
func TestRequestsContentParameters(t *testing.T) {
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /things/{sel}:
    get:
      operationId: getThing
      parameters:
        - name: sel
          in: path
          required: true
          content: {application/json: {schema: {type: array, minItems: 1, items: {type: integer, minimum: 7}}}}
        - name: filter
          in: query
          content: {application/json: {schema: {type: object, required: [size], properties: {size: {type: integer, minimum: 3}}}}}
        - name: X-Ctx
          in: header
          required: true
          content: {application/json: {schema: {type: object, required: [on], properties: {on: {type: boolean}}}}}
      responses: {"200": {description: ok}}
`
	reqs, err := Requests("openapi.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	q := reqs[0]
	if q.Err != nil {
		t.Fatal(q.Err)
	}
	if want := "/things/%5B7%5D?filter=%7B%22size%22%3A3%7D"; q.Target != want {
		t.Errorf("target %s, want %s", q.Target, want)
	}
	if got := q.Header.Get("X-Ctx"); got != `{"on":true}` {
		t.Errorf("X-Ctx: %s, want {\"on\":true}", got)
	}
}

// TestRequestsMultipartEncodings: a multipart part whose encoding says it
// holds a form is one application/x-www-form-urlencoded part, as the
// generated server reads it (model.BodyMedia.FormParts), a JSON part
// is JSON, and a list of files named file[] (PHP's way) is parts of that
// very name; a bare schema name in a discriminator mapping names the member.
func TestRequestsMultipartEncodings(t *testing.T) {
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
components:
  schemas:
    Chat: {type: object, required: [type, chat_id], properties: {type: {type: string}, chat_id: {type: integer}}}
    Other: {type: object, required: [type], properties: {type: {type: string}}}
paths:
  /scopes:
    put:
      operationId: scope
      requestBody:
        required: true
        content:
          application/json:
            schema:
              oneOf: [{$ref: '#/components/schemas/Chat'}, {$ref: '#/components/schemas/Other'}]
              discriminator: {propertyName: type, mapping: {chat: Chat, other: Other}}
      responses: {"200": {description: ok}}
  /uploads:
    put:
      operationId: upload
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              required: ['file[]', meta, doc]
              properties:
                'file[]': {type: array, minItems: 2, items: {type: string, format: binary}}
                meta: {type: object, required: [title], properties: {title: {type: string}}}
                doc: {type: object, required: [n], properties: {n: {type: integer}}}
            encoding:
              meta: {contentType: application/x-www-form-urlencoded}
      responses: {"200": {description: ok}}
`
	reqs, err := Requests("openapi.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range reqs {
		if q.Err != nil {
			t.Fatalf("%s: %v", q.Operation, q.Err)
		}
		if q.Operation == "scope" && !strings.Contains(string(q.Body), `"type":"chat"`) {
			t.Errorf("scope: %s, want the mapping's value chat", q.Body)
		}
		if q.Operation != "upload" {
			continue
		}
		_, params, err := mime.ParseMediaType(q.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		mr := multipart.NewReader(bytes.NewReader(q.Body), params["boundary"])
		var got []string
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(p)
			got = append(got, fmt.Sprintf("%s %q %s %s", p.FormName(), p.FileName(), p.Header.Get("Content-Type"), b))
		}
		want := []string{
			`doc "" application/json {"n":1}`,
			`file[] "conformance.bin" application/octet-stream conformance`,
			`file[] "conformance.bin" application/octet-stream conformance`,
			`meta "" application/x-www-form-urlencoded title=conformance`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("upload parts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
