package generator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// opsSpec is an OpenAPI document of n GET operations.
func opsSpec(n int) []byte {
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf(`"/o%d": {"get": {"operationId": "o%d", "responses": {"200": {"description": "ok"}}}}`, i, i))
	}
	return []byte(`{"openapi": "3.0.3", "info": {"title": "ops", "version": "1"}, "paths": {` + strings.Join(paths, ", ") + `}}`)
}

// TestSplitAbove: a config that leaves split out splits a spec of more than
// SplitAbove operations, and no other; split: false keeps one package
// whatever the size; a split it decides without a go.mod to derive the
// import path from fails, naming the config file, the spec's size and both
// settings that answer it.
func TestSplitAbove(t *testing.T) {
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/big\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	content := func(files []File, name string) string {
		for _, f := range files {
			if f.Name == name {
				return string(f.Content)
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name  string
		ops   int
		split *bool
		want  bool
	}{
		{"at SplitAbove", SplitAbove, nil, false},
		{"above SplitAbove", SplitAbove + 1, nil, true},
		{"above SplitAbove, split: false", SplitAbove + 1, new(false), false},
		{"small, split: true", 2, new(true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Spec: "openapi.json", SpecData: opsSpec(tc.ops), Output: filepath.Join(mod, "api"), Split: tc.split}
			files, _, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := content(files, filepath.Join("internal", "optypes", "types.gen.go")) != ""; got != tc.want {
				setting := "left out"
				if tc.split != nil {
					setting = fmt.Sprint(*tc.split)
				}
				t.Errorf("%d operations, split %s: split %v, want %v", tc.ops, setting, got, tc.want)
			}
			if types := content(files, "types.gen.go"); tc.want && !strings.Contains(types, `"example.com/big/api/internal/`) {
				t.Errorf("types.gen.go does not import the split types by the path go.mod gives:\n%.600s", types)
			}
		})
	}

	// No go.mod above the output: the error says what to set in the file.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), opsSpec(SplitAbove+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "idemgen.yaml"), []byte("spec: openapi.json\noutput: api\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(filepath.Join(dir, "idemgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Generate(cfg)
	if err == nil {
		t.Fatal("a default split without an import path generated")
	}
	for _, want := range []string{"idemgen.yaml: split: openapi.json has 501 operations, more than 500", "no go.mod above", "set importPath, or split: false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
