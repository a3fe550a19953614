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
