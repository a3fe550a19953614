package docsnippets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, whose README.md and docs/*.md are checked.
const root = "../.."

// A snippet is one ```go block of a page.
type snippet struct {
	page   string // relative to root: README.md, docs/routing.md
	line   int    // of the block's first line of code
	marker string // the HTML comment on the line above the block, if any
	code   string
}

func (s snippet) String() string { return fmt.Sprintf("%s:%d", s.page, s.line) }

var (
	fileMarker    = regexp.MustCompile(`^<!-- file: (\S+) -->$`)
	excerptMarker = regexp.MustCompile(`^<!-- go: excerpt (\S+) -->$`)
	skipMarker    = regexp.MustCompile(`^<!-- go: skip(.*)-->$`)
	anyMarker     = regexp.MustCompile(`^<!-- go:`)
)

// extract returns the ```go blocks of the markdown data.
func extract(page string, data []byte) []snippet {
	var out []snippet
	var cur *snippet
	var code strings.Builder
	prev := "" // the last non-blank line outside a block
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &snippet{page: page, line: n + 1, marker: prev}
			code.Reset()
		case cur == nil && strings.HasPrefix(line, "```"):
			// another language's block: skip to its end
			for sc.Scan() {
				n++
				if strings.HasPrefix(sc.Text(), "```") {
					break
				}
			}
			prev = ""
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.code = code.String()
			out = append(out, *cur)
			cur, prev = nil, ""
		case cur != nil:
			code.WriteString(line + "\n")
		case strings.TrimSpace(line) != "":
			prev = strings.TrimSpace(line)
		}
	}
	return out
}

// docPackages are the packages whose package documentation is a manual:
// its code blocks must compile too.
var docPackages = []string{"runtime/idem/doc.go"}

// extractDoc returns the code blocks of the package comment of the Go file
// data.
func extractDoc(page string, data []byte) ([]snippet, error) {
	f, err := parser.ParseFile(token.NewFileSet(), page, data, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return nil, err
	}
	if f.Doc == nil {
		return nil, fmt.Errorf("%s: no package comment", page)
	}
	var out []snippet
	for _, b := range new(comment.Parser).Parse(f.Doc.Text()).Content {
		code, ok := b.(*comment.Code)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(code.Text, "\n")
		line := 1 + bytes.Count(data[:bytes.Index(data, []byte("//\t"+first))], []byte("\n"))
		out = append(out, snippet{page: page, line: line, code: code.Text})
	}
	return out, nil
}

// pages are the markdown pages whose snippets must compile.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.ToSlash(strings.TrimPrefix(d, root+string(filepath.Separator))))
	}
	return out
}

// TestSnippets: every ```go block of README.md and docs/*.md, and every
// code block of runtime/idem's package documentation, compiles in
// package world, is a file of the repository byte for byte, or lines of
// one; or says why it is not compiled.
func TestSnippets(t *testing.T) {
	var all []snippet
	for _, p := range pages(t) {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, extract(p, data)...)
	}
	for _, p := range docPackages {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := extractDoc(p, data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, blocks...)
	}
	var compile []snippet
	kinds := map[string]int{}
	for _, s := range all {
		switch {
		case fileMarker.MatchString(s.marker):
			kinds["file"]++
			path := fileMarker.FindStringSubmatch(s.marker)[1]
			data, err := os.ReadFile(filepath.Join(root, path))
			if err != nil || string(data) != s.code {
				t.Errorf("%s: the block is not %s byte for byte (%v)", s, path, err)
			}
		case excerptMarker.MatchString(s.marker):
			kinds["excerpt"]++
			path := excerptMarker.FindStringSubmatch(s.marker)[1]
			data, err := os.ReadFile(filepath.Join(root, path))
			if err != nil {
				t.Errorf("%s: %v", s, err)
			} else if err := excerpt(string(data), s.code); err != nil {
				t.Errorf("%s: not an excerpt of %s: %v", s, path, err)
			}
		case skipMarker.MatchString(s.marker):
			kinds["skip"]++
			if strings.TrimSpace(skipMarker.FindStringSubmatch(s.marker)[1]) == "" {
				t.Errorf("%s: <!-- go: skip --> without a reason", s)
			}
		case anyMarker.MatchString(s.marker):
			t.Errorf("%s: unknown marker %s (want go: excerpt PATH or go: skip REASON)", s, s.marker)
		default:
			kinds["compiled"]++
			compile = append(compile, s)
		}
	}
	for _, msg := range build(t, compile) {
		t.Error(msg)
	}
	t.Logf("%d snippets in %d pages: %d compiled, %d files, %d excerpts, %d skipped",
		len(all), len(pages(t))+len(docPackages), kinds["compiled"], kinds["file"], kinds["excerpt"], kinds["skip"])
}

// TestSnippetsCatchMistakes: a snippet that does not compile, one that is
// not the file it claims to be an excerpt of, and a skip without a reason
// are reported at their page and line.
func TestSnippetsCatchMistakes(t *testing.T) {
	page := "<!-- go: skip -->\n```go\nx\n```\n\n```go\nengine, err := idem.New(pool, idem.Config{Operatons: nil})\n```\n\n```go\nmux.Handle(\"/\", nil)\nunused := 1\n```\n"
	got := extract("docs/broken.md", []byte(page))
	if len(got) != 3 || got[1].line != 7 || got[0].marker != "<!-- go: skip -->" {
		t.Fatalf("extract: %+v", got)
	}
	msgs := build(t, got[1:])
	if len(msgs) != 1 || !strings.Contains(msgs[0], "docs/broken.md:7:") || !strings.Contains(msgs[0], "Operatons") {
		t.Errorf("build: %q, want one error at docs/broken.md:7 naming Operatons (and none for the unused variable)", msgs)
	}
	if err := excerpt("a\nb\nc\nd\n", "a\n...\nc\n"); err != nil {
		t.Error(err)
	}
	if err := excerpt("a\nb\nc\nd\n", "a\nc\n"); err == nil {
		t.Error("excerpt: a line left out without ... is accepted")
	}
}

// excerpt reports whether code is lines of file, in order: consecutive
// lines of the snippet are consecutive in the file, except where the
// snippet has a line "...". Indentation is not compared.
func excerpt(file, code string) error {
	lines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	f := lines(file)
	pos := 0
	var run []string
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		for i := pos; i+len(run) <= len(f); i++ {
			if equal(f[i:i+len(run)], run) {
				pos = i + len(run)
				run = nil
				return nil
			}
		}
		return fmt.Errorf("%q and what follows it in the snippet are not consecutive lines of the file", run[0])
	}
	for _, l := range lines(code) {
		if l == "..." {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		run = append(run, l)
	}
	return flush()
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// imports are the packages of world/imports.go: every snippet's file
// imports all of them, and "imported and not used" is ignored.
func imports(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("world", "imports.go"), nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// params are the names snippets use without defining them.
const params = `ctx context.Context, t *testing.T, pool *pgxpool.Pool, logger *slog.Logger,
	svc *service.Service, gw gateway.Gateway, engine *idem.Engine, mux *http.ServeMux,
	publisher events.Publisher, audit func(context.Context, idem.Audit), intent Intent`

// unused is the compiler's error for a variable or an import that is not
// used: a snippet may declare what it does not use.
var unused = regexp.MustCompile(`(declared and not used|imported( as \S+)? and not used)`)

// build compiles the snippets as functions of package world (an overlay:
// nothing is written into the module) and returns the compiler's errors,
// at the snippets' pages and lines, but for unused variables and imports.
func build(t *testing.T, snippets []snippet) []string {
	t.Helper()
	if len(snippets) == 0 {
		return nil
	}
	world, err := filepath.Abs("world")
	if err != nil {
		t.Fatal(err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	for i, s := range snippets {
		var b strings.Builder
		b.WriteString("package world\n\nimport (\n")
		for _, imp := range imports(t) {
			fmt.Fprintf(&b, "\t%q\n", imp)
		}
		fmt.Fprintf(&b, ")\n\nfunc snippet%d(%s) error {\n\t{\n", i, params)
		fmt.Fprintf(&b, "//line %s:%d\n%s", filepath.Join(absRoot, s.page), s.line, s.code)
		fmt.Fprintf(&b, "//line snippet%d.go:1\n\t}\n\treturn nil\n}\n", i)
		src := filepath.Join(tmp, fmt.Sprintf("snippet%d.go", i))
		if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(world, fmt.Sprintf("snippet%d.go", i))] = src
	}
	data, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", ov, "-gcflags=-e", "-o", os.DevNull, "./world")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasPrefix(l, "#"), unused.MatchString(l):
			continue
		}
		l = strings.ReplaceAll(l, absRoot+string(filepath.Separator), "")
		msgs = append(msgs, strings.TrimPrefix(l, root+"/"))
	}
	if len(msgs) == 0 && !unused.Match(out) {
		msgs = append(msgs, "go build: "+err.Error()+"\n"+string(out))
	}
	return msgs
}
