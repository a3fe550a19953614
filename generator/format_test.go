package generator

import (
	"bytes"
	"fmt"
	"go/format"
	"path/filepath"
	"strings"
	"testing"
)

// TestFormatSourcesAlike formats what every golden case and every public
// spec renders both with formatSources, in chunks, and with
// go/format.Source, whole, and wants the same bytes; the large files must
// have been cut. Mutations tried: chunks joined without the blank line,
// cutting before any comment line (not only a doc comment's first), the
// package clause of a chunk left in.
func TestFormatSourcesAlike(t *testing.T) {
	type spec struct {
		name   string
		render func(t *testing.T) ([]File, []Warning, error)
		format func(t *testing.T, srcs [][]byte) ([][]byte, []error) // formatSources(srcs)
	}
	formatAll := func(t *testing.T, srcs [][]byte) ([][]byte, []error) { return formatSources(srcs) }
	var specs []spec
	golden, _ := filepath.Glob(filepath.Join("testdata", "golden", "*", "idemgen.yaml"))
	for _, path := range golden {
		specs = append(specs, spec{path, func(t *testing.T) ([]File, []Warning, error) {
			cfg, err := LoadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			return render(cfg)
		}, formatAll})
	}
	for _, tc := range realSpecs {
		// Rendered and formatted (formatRendered: formatSources on every
		// file) once per run, shared with TestRealSpecs.
		specs = append(specs, spec{tc.file, func(t *testing.T) ([]File, []Warning, error) { return renderRealSpec(t, tc.file) },
			func(t *testing.T, srcs [][]byte) ([][]byte, []error) {
				files, _, err := formatRealSpec(t, tc.file)
				if err != nil {
					t.Fatal(err)
				}
				outs := make([][]byte, len(files))
				for i, f := range files {
					outs[i] = f.Content
				}
				return outs, make([]error, len(files))
			}})
	}
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			files, _, err := sp.render(t)
			if err != nil {
				t.Fatal(err)
			}
			srcs := make([][]byte, len(files))
			for i, f := range files {
				srcs[i] = f.Content
			}
			outs, errs := sp.format(t, srcs)
			for i, f := range files {
				want, err := format.Source(f.Content)
				if err != nil || errs[i] != nil {
					t.Fatalf("%s: %v, %v", f.Name, err, errs[i])
				}
				if !bytes.Equal(outs[i], want) {
					t.Errorf("%s: formatted in chunks, differs from go/format.Source at byte %s", f.Name, firstDiff(outs[i], want))
				}
				if n := len(cutDecls(f.Content, 64<<10)); len(f.Content) > 1<<20 && n < 4 {
					t.Errorf("%s: %d bytes cut into %d chunks", f.Name, len(f.Content), n)
				}
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("%d: %q against %q", i, a[max(0, i-40):min(len(a), i+40)], b[max(0, i-40):min(len(b), i+40)])
}

// TestFormatSourcesErrors: a file that does not parse gets go/format's
// error, and a cut in the wrong place (a comment and a local type at the
// start of a line inside a function) formats the file whole, correctly.
func TestFormatSourcesErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("package p\n\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "// T%d is a type.\ntype T%d struct{\nA int\n}\n", i, i)
	}
	b.WriteString("// F is a function.\nfunc F() {\nx := 1\n// t is local.\ntype t int\n_ = t(x)\n}\n")
	good := []byte(b.String())
	bad := []byte(b.String() + "func (\n")
	outs, errs := formatSources([][]byte{good, bad})
	want, err := format.Source(good)
	if err != nil || errs[0] != nil || !bytes.Equal(outs[0], want) {
		t.Errorf("good: %v, %v, equal %v", err, errs[0], bytes.Equal(outs[0], want))
	}
	_, wantErr := format.Source(bad)
	if errs[1] == nil || wantErr == nil || errs[1].Error() != wantErr.Error() {
		t.Errorf("bad: error %v, want %v", errs[1], wantErr)
	}
	if n := len(cutDecls(good, 1<<10)); n < 10 {
		t.Errorf("cut into %d chunks", n)
	}
}
