package generator

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// repoRoot is the module root of idemgen, two levels up from this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tempModule writes files as package dir "api" of a fresh module whose
// go.mod replaces idemgen with this checkout, and returns the module dir.
func tempModule(t testing.TB, files []File) string {
	t.Helper()
	dir := t.TempDir()
	writeGoMod(t, dir)
	if _, err := Write(filepath.Join(dir, "api"), files); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeGoMod writes go.mod and go.sum of a module example.com/generated in
// dir whose go.mod replaces idemgen with this checkout.
func writeGoMod(t testing.TB, dir string) {
	t.Helper()
	root := repoRoot(t)
	if r := os.Getenv("IDEMGEN_RUNTIME_ROOT"); r != "" {
		root = r // a snapshot of the runtime contract, while runtime/ is being rewritten
	}
	// The generated module requires exactly the versions idemgen's go.mod
	// pins, so that `-mod=mod` never looks up a "latest" version and the
	// build is the same on a machine with an empty module cache (where the
	// go command fetches what it needs from the module proxy).
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	requires := ""
	if i := bytes.Index(rootMod, []byte("\nrequire")); i >= 0 {
		requires = string(rootMod[i:])
	}
	gomod := "module " + generatedModule + "\n\ngo 1.26\n\nrequire github.com/idemgen/idemgen v0.0.0\n" + requires +
		"\nreplace github.com/idemgen/idemgen => " + filepath.ToSlash(root) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCommand runs the go command in a generated module. It may download from
// the module proxy: a test must pass on a machine whose module cache is
// empty (GOMODCACHE=$(mktemp -d) CI=true make test), so nothing here may
// assume the cache already holds the module graph.
func goCommand(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	return cmd
}

// runGeneratedTests generates a server and its client from
// testdata/<name>/openapi.yaml, adds testdata/<name>/<name>_test.go (and
// the spec, as testdata/openapi.yaml) to the generated package and runs
// its tests (-v) as package dir name of the run's module (runModule). A
// warning other than those of warnings fails the test, and so does one of
// warnings missing; so does the inner run. It returns the output.
func runGeneratedTests(t *testing.T, name string, warnings ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	dir := filepath.Join("testdata", name)
	spec, err := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join(dir, name+"_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	files, warns, err := Generate(Config{Spec: "openapi.yaml", SpecData: spec, Package: "api", Output: "api", Client: ClientConfig{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, w := range warns {
		got[w.String()] = true
		if !slices.Contains(warnings, w.String()) {
			t.Errorf("warning: %s", w)
		}
	}
	for _, w := range warnings {
		if !got[w] {
			t.Errorf("no warning %q", w)
		}
	}
	files = append(files, File{Name: name + "_test.go", Content: test}, File{Name: "testdata/openapi.yaml", Content: spec})
	modulePackage(t, name, files)
	return moduleResult(t, name)
}
