package idem_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStaleGeneratedCode compiles a file as idemgen generates it, once
// referencing the current support version and once a retired one, into a
// package that exists only in a build overlay (nothing is written to the
// tree): the current one compiles, the retired one fails with a message that
// says to regenerate.
func TestStaleGeneratedCode(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command: %v", err)
	}
	pkgDir, err := filepath.Abs(filepath.Join("internal", "stalegen"))
	if err != nil {
		t.Fatal(err)
	}
	build := func(version string) (string, error) {
		dir := t.TempDir()
		src := filepath.Join(dir, "server.gen.go")
		code := "package stalegen\n\nimport \"github.com/idemgen/idemgen/runtime/idem\"\n\n" +
			"const _ = idem." + version + " // regenerate when this fails to compile\n"
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkgDir, "server.gen.go"): src}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(goBin, "build", "-overlay", ov, "./internal/stalegen").CombinedOutput()
		return string(out), err
	}
	if out, err := build("SupportPackageIsVersion3"); err != nil {
		t.Fatalf("code of the current version does not compile: %v\n%s", err, out)
	}
	for _, retired := range []string{"SupportPackageIsVersion1", "SupportPackageIsVersion2"} {
		out, err := build(retired)
		if err == nil {
			t.Fatalf("code referencing %s compiles", retired)
		}
		for _, want := range []string{"server.gen.go:5:", "idem." + retired, "regenerateThisPackageWithIdemgen", "is not constant"} {
			if !strings.Contains(out, want) {
				t.Errorf("compiling code referencing %s: the message lacks %q:\n%s", retired, want, out)
			}
		}
	}
}
