package generator

import (
	"strings"
	"testing"
)

// formSpec has a form-encoded idempotent operation with a header parameter.
const formSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
%ROOT%
paths:
  /charges:
    post:
      operationId: createCharge
      %OP%
      parameters:
        - {name: X-Account, in: header, schema: {type: string}}
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                amount: {type: integer}
                code: {type: string, pattern: '%PATTERN%'}
                metadata: {type: object, additionalProperties: {type: string}}
      responses:
        '201': {description: created}
`

func formWith(root, op, pattern string) string {
	if pattern == "" {
		pattern = "^[a-z]+$"
	}
	return strings.NewReplacer("%ROOT%", root, "%OP%", op, "%PATTERN%", pattern).Replace(formSpec)
}

// TestRequestSpecErrors: what cannot apply to a request is refused when the
// code is generated, naming the operation and the entry.
func TestRequestSpecErrors(t *testing.T) {
	tests := []struct {
		name, spec string
		skip       []string
		want       string
	}{
		{"exclusion names nothing", formWith("", "x-idempotent: {fingerprint: {exclude: [/metadta]}}", ""), nil,
			`openapi.yaml: line 8: operation "createCharge": x-idempotent.fingerprint.exclude[0]: /metadta names no member of the request body (decoded as application/x-www-form-urlencoded)`},
		{"exclusion below a declared member", formWith("", "x-idempotent: {fingerprint: {exclude: [/amount/x]}}", ""), nil,
			`x-idempotent.fingerprint.exclude[0]: /amount/x names no member of the request body`},
		{"parameter exclusion names nothing", formWith("", "x-idempotent: {fingerprint: {excludeParameters: [{in: header, name: X-Acount}]}}", ""), nil,
			`openapi.yaml: line 8: operation "createCharge": x-idempotent.fingerprint.excludeParameters[0]: the operation declares no header parameter "X-Acount"`},
		{"parameter exclusion in the wrong place", formWith("", "x-idempotent: {fingerprint: {excludeParameters: [{in: query, name: X-Account}]}}", ""), nil,
			`the operation declares no query parameter "X-Account"`},
		{"malformed parameter exclusion", formWith("", "x-idempotent: {fingerprint: {excludeParameters: [X-Account]}}", ""), nil,
			`x-idempotent.fingerprint.excludeParameters[0]: want {in: path|query|header|cookie, name: <parameter>}, got string "X-Account"`},
		{"root exclusion names nothing anywhere", formWith("x-idempotent: {fingerprint: {exclude: [/nowhere]}}", "", ""), nil,
			`openapi.yaml: line 3: x-idempotent.fingerprint.exclude[0]: /nowhere names no member of any idempotent operation's request body`},
		{"unknown style", strings.Replace(formWith("", "", ""), "in: header,", "in: header, style: simpel,", 1), nil,
			`openapi.yaml: line 6: operation "createCharge": header parameter "X-Account": style "simpel" is not one of deepObject, form, label, matrix, pipeDelimited, simple, spaceDelimited (did you mean simple?)`},
		{"unknown type", strings.Replace(formWith("", "", ""), "{type: integer}", "{type: intger}", 1), nil,
			`openapi.yaml: line 17: #/paths/~1charges/post/requestBody/content/application~1x-www-form-urlencoded/schema/properties/amount: type "intger" is not one of array, boolean, integer, null, number, object, string (did you mean integer?)`},
		{"validation skip names nothing", formWith("x-idempotent: {}", "", ""), []string{"createChrge"},
			`openapi.yaml: config validation.skip: "createChrge" names no operationId and no schema or property of a request body or parameter`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Spec: "openapi.yaml", SpecData: []byte(tc.spec), Output: t.TempDir(), Validation: ValidationConfig{Skip: tc.skip}}
			_, _, err := Generate(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func serverFile(t *testing.T, spec string, skip ...string) (string, []Warning) {
	t.Helper()
	files, warns, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: t.TempDir(), Validation: ValidationConfig{Skip: skip}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "server.gen.go" {
			return string(f.Content), warns
		}
	}
	t.Fatal("no server.gen.go")
	return "", nil
}

func TestRequestDescriptors(t *testing.T) {
	// A root exclusion applies where it names something.
	src, _ := serverFile(t, formWith("x-idempotent: {fingerprint: {exclude: [/metadata], excludeParameters: [{in: header, name: x-account}]}}", "", ""))
	for _, want := range []string{
		`{In: "header", Name: "X-Account", Key: "X-Account", Schema: 1, Style: idemimpl.StyleSimple}`, // excluded: no Fingerprint
		`{Type: "application/x-www-form-urlencoded", Decode: idemimpl.AsForm, Schema: 2}`,
		`FingerprintExclude: []string{"/metadata"}`,
		`{Types: idemimpl.TypeString, Pattern: "^[a-z]+$"}`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("server.gen.go lacks %s", want)
		}
	}
	// A pattern RE2 cannot compile is reported and left out.
	src, warns := serverFile(t, formWith("x-idempotent: {}", "", "^(?!x)[a-z]+$"))
	found := false
	for _, w := range warns {
		if strings.Contains(w.String(), `openapi.yaml: #/paths/~1charges/post/requestBody/content/application~1x-www-form-urlencoded/schema/properties/code: pattern "^(?!x)[a-z]+$" is not enforced: Go's regexp (RE2 syntax) cannot compile it`) {
			found = true
		}
	}
	if !found || strings.Contains(src, "(?!x)") {
		t.Errorf("warnings %v; pattern in output: %v", warns, strings.Contains(src, "(?!x)"))
	}
	// Validation off for an operation: its descriptors say so.
	src, _ = serverFile(t, formWith("x-idempotent: {}", "", ""), "createCharge")
	if !strings.Contains(src, `{Types: idemimpl.TypeString, Pattern: "^[a-z]+$", NoValidate: true}`) {
		t.Errorf("validation.skip of the operation not in its descriptors:\n%s", src[strings.Index(src, "var requestSchemas"):])
	}
}
