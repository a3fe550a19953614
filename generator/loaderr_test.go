package generator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// pairSpec is a valid spec.
const pairSpec = `openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /t:
    put:
      operationId: putT
      parameters:
        - name: x
          in: query
          schema: {type: string}
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Pair'}
      responses: {'204': {description: ok}}
components:
  schemas:
    Pair:
      type: array
      items: {type: string}
`

// tupleSpec writes a tuple in the draft-4 way (items: [...]), which
// OpenAPI 3.1 (JSON Schema 2020-12) writes prefixItems.
var tupleSpec = strings.Replace(pairSpec, "items: {type: string}", "items: [{type: string}, {type: integer}]", 1)

// TestLoadErrorsLocated: a spec kin-openapi cannot load is refused with
// each problem's file, line and JSON pointer, in the words of the file's
// format (a YAML file's error does not lead with a JSON error), also in a
// file a $ref names.
func TestLoadErrorsLocated(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	asJSON := func(y string) string {
		var v any
		if err := yaml.Unmarshal([]byte(y), &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	extSpec := strings.Replace(pairSpec, "$ref: '#/components/schemas/Pair'", "$ref: 'schemas/other.yaml#/Thing'", 1)
	for _, tc := range []struct {
		name, file, spec string
		files            map[string]string // other files of the document
		want             string
	}{
		{"tuple", "openapi.yaml", tupleSpec, nil,
			`openapi.yaml: line 20: #/components/schemas/Pair/items: a sequence where a schema (a mapping) is expected; a tuple is prefixItems: [...] in OpenAPI 3.1 (JSON Schema 2020-12)`},
		{"tuple in JSON", "openapi.json", asJSON(tupleSpec), nil,
			`openapi.json: line 5: #/components/schemas/Pair/items: an array where a schema (an object) is expected; a tuple is prefixItems: [...] in OpenAPI 3.1 (JSON Schema 2020-12)`},
		{"a string for a boolean", "openapi.yaml", strings.Replace(pairSpec, "in: query", "in: query\n          required: yes please", 1), nil,
			`openapi.yaml: line 10: #/paths/~1t/put/parameters/0/required: "yes please" where a boolean is expected`},
		{"YAML syntax", "openapi.yaml", strings.Replace(pairSpec, "{title: t, version: '1'}", "{title: t", 1), nil,
			`openapi.yaml: line 2: did not find expected ',' or '}'`},
		{"JSON syntax", "openapi.json", strings.Replace(asJSON(pairSpec), `"openapi": "3.1.0",`, `"openapi": "3.1.0"`, 1), nil,
			`openapi.json: line 17, column 3: invalid character '"' after object key:value pair`},
		{"a file that is not there", "openapi.yaml", extSpec, nil,
			`openapi.yaml: line 14: #/paths/~1t/put/requestBody/content/application~1json/schema: $ref "schemas/other.yaml#/Thing" does not resolve: open schemas/other.yaml: no such file or directory`},
		{"a name that is not there", "openapi.yaml", extSpec, map[string]string{"schemas/other.yaml": "Thin: {type: string}\n"},
			`openapi.yaml: line 14: #/paths/~1t/put/requestBody/content/application~1json/schema: $ref "schemas/other.yaml#/Thing" does not resolve: schemas/other.yaml has no Thing (did you mean Thin?)`},
		{"a bad value there", "openapi.yaml", extSpec, map[string]string{"schemas/other.yaml": "Thing:\n  $ref: 'deep.yaml#/D'\n", "schemas/deep.yaml": "D:\n  type: object\n  required: 5\n"},
			`schemas/deep.yaml: line 3: #/D/required: the number 5 where a sequence is expected`},
		{"a $ref that does not resolve there", "openapi.yaml", extSpec, map[string]string{"schemas/other.yaml": "Thing: {$ref: '#/Nothing'}\n"},
			`schemas/other.yaml: line 1: #/Thing: $ref "#/Nothing" does not resolve: schemas/other.yaml has no Nothing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll("schemas")
			for name, content := range tc.files {
				write(name, content)
			}
			write(tc.file, tc.spec)
			_, _, err := Generate(Config{Spec: tc.file, Output: "api"})
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestMissingSpecNamesConfig: a spec that idemgen.yaml names and that is
// not there is reported at the config's spec key, with the nearest file.
func TestMissingSpecNamesConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openapi.yaml"), []byte(pairSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "idemgen.yaml")
	if err := os.WriteFile(cfgPath, []byte("package: api\nspec: openapi.yml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Generate(cfg)
	want := cfgPath + ": line 2: spec: openapi.yml: no such file or directory (did you mean openapi.yaml?)"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
