package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateWarnsNotIdempotent: a POST without x-idempotent in a spec
// without a root default generates (an ordinary POST) with a warning naming
// it; -strict makes that a failure that writes nothing.
func TestGenerateWarnsNotIdempotent(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "openapi.yaml"), spec) // createOrder: no x-idempotent, no root
	want := `idemgen: warning: openapi.yaml: operation "createOrder" (POST /orders): not idempotent: no x-idempotent on the operation or at the root (annotate it, or opt out with x-idempotent: false)`

	t.Chdir(dir)
	code, _, stderr := runCmd(t, "generate", "-spec", "openapi.yaml", "-output", "api")
	if code != 0 || !strings.Contains(stderr, want+"\n") {
		t.Errorf("generate: exit %d, stderr:\n%s\nwant 0 and\n%s", code, stderr, want)
	}
	if strings.Contains(stderr, "cancelOrder") {
		t.Errorf("generate warns about cancelOrder, which opts out:\n%s", stderr)
	}
	code, _, stderr = runCmd(t, "generate", "-strict", "-spec", "openapi.yaml", "-output", "strict")
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "idemgen: -strict: 1 warning(s); nothing written") {
		t.Errorf("generate -strict: exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat("strict"); !os.IsNotExist(err) {
		t.Errorf("generate -strict wrote files (%v)", err)
	}
	// With a root default, no warning.
	write(t, filepath.Join(dir, "openapi.yaml"), "x-idempotent: {}\n"+spec)
	if code, _, stderr := runCmd(t, "generate", "-strict", "-spec", "openapi.yaml", "-output", "api"); code != 0 || stderr != "" {
		t.Errorf("generate -strict with a root default: exit %d, %s", code, stderr)
	}
	// lint reports it once, as an error.
	write(t, filepath.Join(dir, "openapi.yaml"), spec)
	_, stdout, _ := runCmd(t, "lint", "openapi.yaml")
	if strings.Count(stdout, "not idempotent: no x-idempotent") != 1 || !strings.Contains(stdout, "idemgen: error: ") {
		t.Errorf("lint reports the gap other than once as an error:\n%s", stdout)
	}
}

// TestSpecMistakesNamed: a $ref to a missing schema names the reference,
// where it is used and the nearest schema, in generate and (as an error
// finding) in lint; a misspelt x-idempotent field or config key suggests
// the nearest; a bad value an operation sets is not blamed on the root.
func TestSpecMistakesNamed(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ref := strings.Replace(refSpec, "$ref: '#/components/schemas/Order'", "$ref: '#/components/schemas/Ordr'", 1)
	write(t, "ref.yaml", ref)
	wantRef := `ref.yaml: line 12: #/paths/~1orders/post/requestBody/content/application~1json/schema: $ref "#/components/schemas/Ordr" does not resolve: #/components/schemas has no Ordr (did you mean Order?)`
	if code, _, stderr := runCmd(t, "generate", "-spec", "ref.yaml", "-output", "api"); code != 1 || stderr != "idemgen: "+wantRef+"\n" {
		t.Errorf("generate with a missing $ref: exit %d, stderr:\n%s\nwant:\nidemgen: %s", code, stderr, wantRef)
	}
	if code, stdout, _ := runCmd(t, "lint", "ref.yaml"); code != 1 || stdout != "idemgen: error: "+wantRef+"\n" {
		t.Errorf("lint with a missing $ref: exit %d, stdout:\n%s", code, stdout)
	}

	bad := strings.Replace(refSpec, "operationId: createOrder", "operationId: createOrder\n      x-idempotent: {mode: atmic, tll: 2h}", 1)
	write(t, "bad.yaml", "x-idempotent: {mode: atomic}\n"+bad)
	code, _, stderr := runCmd(t, "generate", "-spec", "bad.yaml", "-output", "api")
	for _, want := range []string{
		"idemgen: bad.yaml: line 8: operation \"createOrder\": x-idempotent.mode: \"atmic\" is not one of atomic, lease\n",
		"idemgen: bad.yaml: line 8: operation \"createOrder\": x-idempotent.tll: unknown field (did you mean ttl?)\n",
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("generate: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if strings.Contains(stderr, "document root") {
		t.Errorf("a mode the operation sets is blamed on the root:\n%s", stderr)
	}

	write(t, "openapi.yaml", "x-idempotent: {}\n"+refSpec)
	write(t, "idemgen.yaml", "spec: openapi.yaml\npackge: api\nvalidation:\n  skips: [x]\n")
	code, _, stderr = runCmd(t, "generate")
	want := "idemgen: idemgen.yaml: line 2: unknown key \"packge\" (did you mean package?)\nidemgen: idemgen.yaml: line 4: unknown key \"skips\" (did you mean skip?)\n"
	if code != 1 || stderr != want {
		t.Errorf("generate with misspelt config keys: exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
	}
}

const refSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/Order'
      responses:
        '201': {description: created}
components:
  schemas:
    Order: {type: object}
`
