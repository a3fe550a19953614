package generator

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHandlersInlineNoPerOperationCall builds a generated package with the
// compiler's inlining report (-gcflags=-m) and fails when one of the calls
// every operation's handler or decoder makes is inlined: Engine.Serve and
// ServeStream (each copy brings its closure, for the compiler to build
// again), Request.Err and handler.fail. Inlined, they were 30% of the compile
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

// TestEncodersBuildNoMethodTables compiles a generated package whose specs
// share responses between operations and fails when its object file holds
// a method table (itab) of a response type for an operation's response
// interface. The encoders' type switches are on any(resp) so that the
// compiler builds none: each table lists every method of the type, and a
// response shared by n operations has n marker methods and n tables, n² in
// all (two fifths of the compile of format_gen's types, BENCHMARKS.md).
func TestEncodersBuildNoMethodTables(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	spec := filepath.Join("testdata", "golden", "openapi31", "openapi.yaml")
	files, _, err := Generate(Config{Spec: spec, Package: "api", Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fileContent(files, "types.gen.go"), "\ntype CreateNoteDefaultResponse = ProblemResponse\n") {
		t.Fatal("the operations of testdata/golden/openapi31 no longer share ProblemResponse, which this test needs")
	}
	dir := tempModule(t, files)
	archive := filepath.Join(t.TempDir(), "api.a")
	if out, err := goCommand(dir, "build", "-o", archive, "./api").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	syms, err := goCommand(dir, "tool", "nm", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, syms)
	}
	if !bytes.Contains(syms, []byte(" go:itab.")) {
		t.Fatalf("go tool nm lists no method table at all; its output:\n%.2000s", syms)
	}
	itab := regexp.MustCompile(`go:itab\.` + regexp.QuoteMeta(generatedModule) + `/api\.(\w+),` + regexp.QuoteMeta(generatedModule) + `/api\.(\w+Response)\b`)
	if m := itab.FindAllSubmatch(syms, -1); len(m) > 0 {
		t.Errorf("the generated package builds %d method tables of responses for operations' response interfaces; the first: %s for %s", len(m), m[0][1], m[0][2])
	}
}
