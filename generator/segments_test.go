package generator

import (
	"strings"
	"testing"
)

// TestPathSegments generates a server from testdata/segments/openapi.yaml,
// whose paths put parameters and literals in one segment (GitHub's
// /compare/{base}...{head}, /files/{name}.json beside /files/{id},
// /versions/v{major}-{minor}), and runs testdata/segments/segments_test.go in
// the generated package over real HTTP against PostgreSQL (DATABASE_URL;
// under CI=true the inner test fails without it, through runtime/pgtest).
func TestPathSegments(t *testing.T) {
	out := runGeneratedTests(t, "segments")
	for _, name := range []string{"TestCompareCommits", "TestMergeRefsIdempotent", "TestFilesRoute", "TestVersions", "TestClient", "TestOverlappingRoutes"} {
		if !strings.Contains(out, "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

// TestPathSegmentErrors: a segment no path can be split by is refused at
// generation, naming the operation and the segment.
func TestPathSegmentErrors(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/x/{a}{b}", `operation "op": path segment "{a}{b}": parameters "a" and "b" have no literal between them`},
		{"/x/v{a}{b}.json", `path segment "v{a}{b}.json": parameters "a" and "b" have no literal between them`},
		{"/x/{a", `path segment "{a": '{' without '}'`},
		{"/x/{a{b}}", `path segment "{a{b}}": '{' without '}'`},
		{"/x/a}", `path segment "a}": '}' without '{'`},
		{"/x/{}", `path segment "{}": a parameter without a name`},
	} {
		spec := "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  " + tc.path + ":\n    get:\n      operationId: op\n      responses: {'204': {description: ok}}\n"
		_, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "api"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
	// Two operations no path tells apart.
	spec := `openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /f/{name}.json:
    get: {operationId: a, parameters: [{name: name, in: path, required: true, schema: {type: string}}], responses: {'204': {description: ok}}}
  /f/{id}.json:
    get: {operationId: b, parameters: [{name: id, in: path, required: true, schema: {type: string}}], responses: {'204': {description: ok}}}
`
	_, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(spec), Package: "api", Output: "api"})
	if want := `operations "b" (GET /f/{id}.json) and "a" (GET /f/{name}.json) have the same route`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want an error containing %q", err, want)
	}
}
