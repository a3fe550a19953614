package generator

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGolden generates every case of testdata/golden/<case> from its
// idemgen.yaml and compares with <case>/want. -update rewrites want/.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "idemgen.yaml"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, cfgPath := range cases {
		dir := filepath.Dir(cfgPath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, err := LoadConfig(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			files, warnings, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var ws []string
			for _, w := range warnings {
				ws = append(ws, w.String()+"\n")
			}
			files = append(files, File{Name: "warnings.txt", Content: []byte(strings.Join(ws, ""))})
			if *update {
				if err := os.RemoveAll(cfg.Output); err != nil {
					t.Fatal(err)
				}
				if _, err := Write(cfg.Output, files); err != nil {
					t.Fatal(err)
				}
				return
			}
			var onDisk []string
			filepath.WalkDir(cfg.Output, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(cfg.Output, p)
					onDisk = append(onDisk, filepath.ToSlash(rel))
				}
				return nil
			})
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				want, err := os.ReadFile(filepath.Join(cfg.Output, f.Name))
				if err != nil {
					t.Errorf("%v (run go test ./generator -run TestGolden -update)", err)
					continue
				}
				if !bytes.Equal(want, f.Content) {
					d, _ := Diff(cfg.Output, []File{f})
					t.Errorf("%s is stale (run go test ./generator -run TestGolden -update):\n%s", f.Name, d)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, onDisk) {
				t.Errorf("want/ holds %v, generation gives %v", onDisk, names)
			}
			// Deterministic: a second run gives the same bytes.
			again, _, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range again {
				if !bytes.Equal(again[i].Content, files[i].Content) {
					t.Errorf("%s differs between two runs", again[i].Name)
				}
			}
		})
	}
}

// TestGoldenCompiles builds and vets every golden want/ package, each as a
// package golden/<case> of the run's module (runModule).
func TestGoldenCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles generated code; skipped with -short")
	}
	cases, _ := filepath.Glob(filepath.Join("testdata", "golden", "*", "want"))
	var files []File
	for _, want := range cases {
		name := filepath.Base(filepath.Dir(want))
		err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(want, p)
			// The split case imports its packages by their path in the
			// golden module (importPath); here they are below golden/<case>.
			data = bytes.ReplaceAll(data, []byte(`"example.com/golden/`+name+`/want/`), []byte(`"`+generatedModule+`/golden/`+name+`/`))
			files = append(files, File{Name: filepath.Join(name, rel), Content: data})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	modulePackage(t, "golden", files)
	moduleResult(t, "golden")
}
