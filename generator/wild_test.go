package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWild generates a server and its client from testdata/wild/openapi.yaml
// (shapes of public specs idemgen generated wrongly: issue 22) and runs
// testdata/wild/wild_test.go in the generated package, over real HTTP with
// the idempotency engine on PostgreSQL (DATABASE_URL; under CI=true the
// inner test fails without it, through runtime/pgtest). The two warnings
// are the spec's own doing, each worded once with the file's name.
func TestWild(t *testing.T) {
	t.Logf("%s", runGeneratedTests(t, "wild",
		`openapi.yaml: operation "getItem": path parameter "shopId" is not in the path /items/{itemId}: it is ignored (no request field)`,
		`openapi.yaml: Go identifier CreateAnswerRequest (package) is generated for both schema #/components/schemas/CreateAnswerRequest and operation "createAnswer" (POST /answers) #/paths/~1answers/post; the latter is named CreateAnswerRequest2 (set rename "#/paths/~1answers/post" in the config to choose another name)`,
	))
}

// TestSourceNamed: generated files name the spec as the config writes it,
// or as given, never relative to the output directory; that is also the
// name in NewHandler's start-up panic.
func TestSourceNamed(t *testing.T) {
	spec := []byte(`openapi: 3.0.3
info: {title: t, version: '1'}
security: [{key: []}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
paths:
  /a:
    get:
      responses: {'200': {description: ok}}
`)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "specs", "openapi.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "idemgen.yaml"), []byte("spec: specs/openapi.yaml\noutput: internal/api\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(filepath.Join(dir, "idemgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	given := Config{Spec: "specs/openapi.yaml", SpecData: spec, Output: "internal/api"}
	for name, cfg := range map[string]Config{"config": cfg, "given": given} {
		files, _, err := Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		server := string(fileNamed(files, "server.gen.go")[0].Content)
		for _, want := range []string{"// source: specs/openapi.yaml\n", "one method per operation of specs/openapi.yaml.",
			`panic("api: operations of specs/openapi.yaml require security`} {
			if !strings.Contains(server, want) {
				t.Errorf("%s: server.gen.go lacks %q", name, want)
			}
		}
		if strings.Contains(server, "../") {
			t.Errorf("%s: server.gen.go names the spec relative to the output directory", name)
		}
	}
}

// TestMediaTypeWarning: a second media type with the schema of the first
// that idemgen reads otherwise (text/plain as bytes) is refused with a
// warning that says so, not that the schemas differ; text/json and
// application/x-json are JSON and accepted.
func TestMediaTypeWarning(t *testing.T) {
	spec := []byte(`openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /m:
    put:
      operationId: putM
      requestBody:
        content:
          application/json: {schema: {$ref: '#/components/schemas/M'}}
          text/json: {schema: {$ref: '#/components/schemas/M'}}
          application/x-json: {schema: {$ref: '#/components/schemas/M'}}
          text/plain: {schema: {$ref: '#/components/schemas/M'}}
          application/xml: {schema: {type: object, properties: {b: {type: string}}}}
      responses: {'204': {description: ok}}
components:
  schemas:
    M: {type: object, properties: {a: {type: string}}}
`)
	files, warnings, err := Generate(Config{Spec: "openapi.yaml", SpecData: spec, Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{
		`openapi.yaml: operation "putM" request body: application/xml is not accepted (415): its schema is not the one of application/json, which types the body`,
		`openapi.yaml: operation "putM" request body: text/plain is not accepted (415): it has the schema of application/json, but idemgen reads text/plain as raw bytes, not as JSON`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	server := string(fileNamed(files, "server.gen.go")[0].Content)
	for _, mt := range []string{"application/json", "text/json", "application/x-json"} {
		if !strings.Contains(server, `{Type: "`+mt+`", Decode: idemimpl.AsJSON`) {
			t.Errorf("%s is not decoded as JSON", mt)
		}
	}
}

// TestUniqueness generates the server of testdata/uniqueness/openapi.yaml,
// a service with business rules (one account per email, notes under an
// existing account), and runs testdata/uniqueness/uniqueness_test.go in the
// generated package: the conformance checks over real HTTP against it on
// PostgreSQL pass with one body template, and without it the report says
// why the service refused and skips what depends on it.
func TestUniqueness(t *testing.T) {
	t.Logf("%s", runGeneratedTests(t, "uniqueness"))
}
