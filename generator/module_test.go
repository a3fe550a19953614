package generator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// runModule is the one module this test binary compiles generated code in:
// every test that builds, vets or runs a generated package writes it as a
// package of its own here (modulePackage) and, once every test's sequential
// part has ended, one go test builds, vets (-vet=all: every check go vet
// makes, also in packages without tests) and tests all of them.
//
// One go command instead of one (or three: build, vet, test) per test: the
// module graph is loaded once, the packages every generated package
// imports (the runtime, pgx, net/http's test helpers) are compiled once,
// and the go command schedules the packages' compiles, vets, links and
// test runs on every core. Each test still fails on its own: it reads the
// go command's JSON events of its own package (moduleResult).
var runModule struct {
	mu      sync.Mutex
	dir     string             // the module's root, made by the first package
	pkgs    map[string]string  // package dir -> the test that wrote it
	once    sync.Once          // runs the go command
	results map[string]*pkgRun // import path -> what the go command said of it
	out     []byte             // the go command's whole output, for what no package claims
	err     error              // the go command's error
	took    time.Duration      // how long it ran
}

// pkgRun is what one go test said about one package of runModule.
type pkgRun struct {
	output strings.Builder // build, vet and test output, as go test -v prints it
	passed bool            // the package built, vetted and (if it has tests) passed
}

// removeRunModule deletes runModule's directory (TestMain, after the tests).
func removeRunModule() {
	if runModule.dir != "" {
		os.RemoveAll(runModule.dir)
	}
}

// modulePackage writes files as the package in directory pkg (a path
// below the module root, unique in the run) of runModule and returns the
// package's directory. The files' names are relative to it.
func modulePackage(t testing.TB, pkg string, files []File) string {
	t.Helper()
	dir := runModuleDir(t)
	runModule.mu.Lock()
	defer runModule.mu.Unlock()
	if runModule.results != nil {
		// The go test of the last round has run: this is the next round
		// of go test -count=n, which starts once the last one has ended.
		runModule.pkgs, runModule.results, runModule.once = map[string]string{}, nil, sync.Once{}
	}
	if by, ok := runModule.pkgs[pkg]; ok {
		t.Fatalf("package %s of the run's module is written by %s already", pkg, by)
	}
	runModule.pkgs[pkg] = t.Name()
	if _, err := Write(filepath.Join(dir, pkg), files); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, pkg)
}

// runModuleDir returns runModule's root, made on the first call: a module
// whose go.mod requires exactly what idemgen's does and replaces idemgen
// with this checkout (tempModule's).
func runModuleDir(t testing.TB) string {
	t.Helper()
	runModule.mu.Lock()
	defer runModule.mu.Unlock()
	if runModule.dir == "" {
		dir, err := os.MkdirTemp("", "idemgen-generated-")
		if err != nil {
			t.Fatal(err)
		}
		writeGoMod(t, dir)
		runModule.dir, runModule.pkgs = dir, map[string]string{}
	}
	return runModule.dir
}

// moduleResult waits until every test has written its packages (the
// calling test goes on as a parallel test: the sequential part of every
// other test has then ended), runs runModule's go test on the first call,
// and returns what it printed for the packages in directory pkg and below
// (their build, vet and -v test output). The test fails, with that output,
// unless every one of them built, vetted and passed. The caller may call
// it once, not from a subtest run in parallel with its parent.
func moduleResult(t *testing.T, pkg string) string {
	t.Helper()
	t.Parallel()
	runModule.once.Do(runModuleTests)
	prefix := generatedModule + "/" + filepath.ToSlash(pkg)
	var out strings.Builder
	ok, n := true, 0
	for _, path := range slices.Sorted(maps.Keys(runModule.results)) {
		if path != prefix && !strings.HasPrefix(path, prefix+"/") {
			continue
		}
		r := runModule.results[path]
		n++
		ok = ok && r.passed
		out.WriteString(r.output.String())
	}
	switch {
	case runModule.err != nil && n == 0:
		t.Fatalf("go test of the generated packages: %v\n%s", runModule.err, runModule.out)
	case n == 0:
		t.Fatalf("go test of the generated packages says nothing of %s:\n%s", prefix, runModule.out)
	case !ok:
		t.Fatalf("go test of the generated package %s: %v\n%s", prefix, runModule.err, out.String())
	}
	t.Logf("the run's generated packages built, vetted and tested by one go test in %v", runModule.took.Round(time.Millisecond))
	return out.String()
}

// generatedModule is runModule's module path.
const generatedModule = "example.com/generated"

// runModuleTests runs go test -json on every package of runModule and
// sorts its events by package.
func runModuleTests() {
	runModule.mu.Lock()
	defer runModule.mu.Unlock()
	runModule.results = map[string]*pkgRun{}
	start := time.Now()
	var stderr bytes.Buffer
	cmd := goCommand(runModule.dir, "test", "-count=1", "-vet=all", "-json", "./...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	runModule.took = time.Since(start)
	runModule.out, runModule.err = append(out, stderr.Bytes()...), err
	failed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev struct{ ImportPath, Package, Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		path := ev.Package
		if path == "" {
			path = ev.ImportPath
		}
		// "p [p.test]", "p_test [p.test]": the package's test variants.
		path, _, _ = strings.Cut(path, " ")
		path = strings.TrimSuffix(path, "_test")
		if path == "" {
			continue
		}
		r := runModule.results[path]
		if r == nil {
			r = new(pkgRun)
			runModule.results[path] = r
		}
		r.output.WriteString(ev.Output)
		switch {
		case ev.Action == "build-fail", ev.Action == "fail" && ev.Test == "":
			failed[path] = true
		case ev.Package != "" && ev.Test == "" && (ev.Action == "pass" || ev.Action == "skip"):
			r.passed = true
		}
	}
	for path := range failed {
		runModule.results[path].passed = false
	}
}
