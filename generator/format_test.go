package generator

import (
	"bytes"
	"fmt"
	"go/format"
	"path/filepath"
	"testing"

	"github.com/idemgen/idemgen/generator/internal/emit"
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
		format func(t *testing.T, srcs [][]byte) ([][]byte, []error) // Format's
	}
	formatAll := func(t *testing.T, srcs [][]byte) ([][]byte, []error) { // Format: formatSources on every file
		files := make([]File, len(srcs))
		for i, src := range srcs {
			files[i] = File{Name: fmt.Sprint(i, ".go"), Content: bytes.Clone(src)}
		}
		files, err := emit.Format(files)
		if err != nil {
			t.Fatal(err)
		}
		outs := make([][]byte, len(files))
		for i, f := range files {
			outs[i] = f.Content
		}
		return outs, make([]error, len(files))
	}
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
				if n := len(emit.CutDecls(f.Content, 64<<10)); len(f.Content) > 1<<20 && n < 4 {
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
