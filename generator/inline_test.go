package generator

import (
	"path/filepath"
	"regexp"
	"testing"
)

// TestHandlersInlineNoPerOperationCall builds a generated package with the
// compiler's inlining report (-gcflags=-m) and fails when one of the calls
// every operation's handler or decoder makes is inlined: Engine.Serve and
// ServeStream (each copy brings its closure, for the compiler to build
// again), Request.Err and handler.fail. Inlined, they were 29% of the compile
// CPU of a 1 072-operation spec (BENCHMARKS.md, "Generating and compiling
// code").
func TestHandlersInlineNoPerOperationCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	spec := filepath.Join("testdata", "golden", "payments", "openapi.yaml")
	files, _, err := Generate(Config{Spec: spec, Package: "api", Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	dir := tempModule(t, files)
	out, err := goCommand(dir, "build", "-gcflags="+generatedModule+"/api=-m", "./api").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)inlining call to `).Match(out) {
		t.Fatalf("no inlining report in go build -gcflags=-m's output:\n%s", out)
	}
	perOperation := regexp.MustCompile(`(?m)inlining call to (idem\.\(\*Engine\)\.Serve(Stream)?|idemimpl\.\(\*Request\)\.Err|\(\*handler\)\.fail)$`)
	if m := perOperation.FindAll(out, -1); len(m) > 0 {
		t.Errorf("the generated handlers inline calls each operation makes once, %d in all; the first: %s", len(m), m[0])
	}
}
