package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/pgtest"
)

// fencedAfter returns the fenced code block that follows the line holding
// marker in a markdown document, and whether there is one.
func fencedAfter(doc, marker string) (string, bool) {
	i := strings.Index(doc, marker)
	if i < 0 {
		return "", false
	}
	rest := doc[i:]
	start := strings.Index(rest, "\n```")
	if start < 0 {
		return "", false
	}
	rest = rest[start+4:]
	rest = rest[strings.Index(rest, "\n")+1:] // the info string
	end := strings.Index(rest, "```")
	if end < 0 {
		return "", false
	}
	return rest[:end], true
}

// shellLines joins backslash continuations and drops blank lines.
func shellLines(block string) []string {
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(block, "\n") {
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			continue
		}
		cur.WriteString(l)
		if s := strings.Join(strings.Fields(cur.String()), " "); s != "" {
			lines = append(lines, s)
		}
		cur.Reset()
	}
	return lines
}

// TestQuickstartFiles: the files the README shows (after a
// `<!-- file: PATH -->` line) are those of the repository, byte for byte,
// so that the quickstart shows what init writes and what the tests run.
func TestQuickstartFiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	marks := regexp.MustCompile(`<!-- file: (\S+) -->`).FindAllStringSubmatch(doc, -1)
	if len(marks) < 3 {
		t.Fatalf("README shows %d files, want the quickstart's spec, config and service", len(marks))
	}
	for _, m := range marks {
		block, ok := fencedAfter(doc, m[0])
		if !ok {
			t.Errorf("README: no code block after %s", m[0])
			continue
		}
		want, err := os.ReadFile(filepath.Join("../..", m[1]))
		if err != nil {
			t.Errorf("README shows %s: %v", m[1], err)
			continue
		}
		if block != string(want) {
			t.Errorf("README's copy of %s differs from the file; paste the file again", m[1])
		}
	}
}

// TestQuickstart follows the README's quickstart line by line in a temp
// directory: the module is pointed at this checkout as
// docs/getting-started.md says to before a release (its prerelease block
// runs in place of `go get -tool`), and the last line's `go test ./...`
// runs against the test's PostgreSQL. A line the test does not know fails
// it, so the README cannot drift from what is tested. Then, with the tool
// built as users build it, `go tool idemgen version` must say (devel), as
// the generated files do, not the v0.0.0-00010101000000-000000000000 Go
// stamps on a replaced module.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a project (-short)")
	}
	dbURL := pgtest.URL(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	quick, ok := fencedAfter(string(readme), "<!-- quickstart")
	if !ok {
		t.Fatal("README: no quickstart block after <!-- quickstart -->")
	}
	started, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	pre, ok := fencedAfter(string(started), "<!-- prerelease")
	if !ok {
		t.Fatal("docs/getting-started.md: no block after <!-- prerelease -->")
	}

	dir := t.TempDir()
	ran := 0
	for _, line := range shellLines(quick) {
		args := strings.Fields(line)
		switch {
		case regexp.MustCompile(`^mkdir (\w+) && cd (\w+)$`).MatchString(line) && args[1] == args[4]:
			dir = filepath.Join(dir, args[1])
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "go mod "):
			goCmd(t, dir, nil, args[1:]...)
		case line == "go get -tool github.com/idemgen/idemgen/cmd/idemgen":
			for _, p := range shellLines(pre) {
				pargs := strings.Fields(p)
				switch {
				case strings.HasPrefix(p, "git clone "): // the checkout is this repository
				case strings.HasPrefix(p, "go mod "):
					for i, a := range pargs {
						pargs[i] = strings.Replace(a, "=../idemgen", "="+repo, 1)
					}
					goCmd(t, dir, nil, pargs[1:]...)
				default:
					t.Fatalf("getting-started.md prerelease: line %q: the test does not know how to run it", p)
				}
			}
		case strings.HasPrefix(line, "go tool idemgen "):
			goCmd(t, dir, nil, args[1:]...)
		case line == `bash "$(go list -m -f '{{.Dir}}' github.com/idemgen/idemgen)/scripts/pg.sh" run go test ./...`:
			// pg.sh is where the command finds it; this test already runs
			// inside one, so only go test runs.
			got := strings.TrimSpace(goCmd(t, dir, nil, "list", "-m", "-f", "{{.Dir}}", "github.com/idemgen/idemgen"))
			if _, err := os.Stat(filepath.Join(got, "scripts", "pg.sh")); err != nil || got != repo {
				t.Fatalf("go list -m gives %s (%v), want %s with scripts/pg.sh", got, err, repo)
			}
			testArgs := []string{"test", "-count=1", "-v"}
			if raceEnabled {
				testArgs = append(testArgs, "-race") // shares the build cache of this run's packages
			}
			out := goCmd(t, dir, []string{"DATABASE_URL=" + dbURL}, append(testArgs, "./...")...)
			if !strings.Contains(out, "--- PASS: TestBookings") {
				t.Errorf("the new service's test did not pass:\n%s", out)
			}
		default:
			t.Fatalf("README quickstart: line %q: the test does not know how to run it", line)
		}
		ran++
	}
	if ran < 6 {
		t.Fatalf("ran %d quickstart lines, want the 6 from mkdir to go test", ran)
	}
	// The generated files are what generate writes from the spec.
	goCmd(t, dir, nil, "tool", "idemgen", "generate", "-check")
	if out := goCmd(t, dir, nil, "tool", "idemgen", "version"); !strings.HasPrefix(out, "idemgen (devel) (") || strings.Contains(out, "v0.0.0") {
		t.Errorf("go tool idemgen version: %q; want idemgen (devel) and why", out)
	}
}
