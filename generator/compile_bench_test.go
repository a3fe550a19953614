package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/generator/model"
)

// BenchmarkCompile measures what a generated package costs the Go compiler,
// beside oapi-codegen's output for the same spec, in the same run: Spotify's
// description ten times over (970 operations; copy N under /cN with its
// components and operation IDs suffixed CN, and a root `x-idempotent: {}`),
// a large spec whose output both generators compile. Each package is built
// once with its dependencies; each iteration then appends a comment to it,
// so that `go build` recompiles that package alone, and reports the CPU
// (user + sys of the go command and the compiler) and the peak RSS; with
// split: true (idemgen-split/...), each of the four packages is rebuilt
// alone, so the split output's CPU is the sum of the four and its peak
// the largest. Run
// with -benchtime=3x or more; the sub-benchmarks alternate only across
// runs (-count), so compare them from the same invocation.
func BenchmarkCompile(b *testing.B) {
	dir := b.TempDir()
	_, data := readSpec(b, "spotify-web-api.yml")
	spec := filepath.Join(dir, "spotify10.json")
	if err := os.WriteFile(spec, multiplySpec(b, data, 10), 0o644); err != nil {
		b.Fatal(err)
	}
	files, _, err := Generate(Config{Spec: spec, Package: "api", Output: "api", Split: new(false)})
	if err != nil {
		b.Fatal(err)
	}
	idem := tempModule(b, files)
	b.Run("idemgen", func(b *testing.B) { benchmarkRebuild(b, idem, "api/types.gen.go") })

	// split: true, each of the four packages rebuilt alone (a comment
	// in a dependency does not change its export data, so the packages
	// that import it are not compiled again).
	files, _, err = Generate(Config{Spec: spec, Package: "api", Output: "api", Split: new(true), ImportPath: generatedModule + "/api"})
	if err != nil {
		b.Fatal(err)
	}
	split := tempModule(b, files)
	for _, part := range [][2]string{
		{"schematypes", model.SchemaTypesDir + "/types.gen.go"},
		{"optypes", model.OpTypesDir + "/types.gen.go"},
		{"unimplemented", model.UnimplementedDir + "/unimplemented.gen.go"},
		{"api", "types.gen.go"},
	} {
		b.Run("idemgen-split/"+part[0], func(b *testing.B) { benchmarkRebuild(b, split, path.Join("api", part[1])) })
	}

	bin, err := oapiCodegenBinary(filepath.Join(dir, "oapi"))
	if err != nil {
		b.Skip(err)
	}
	src, err := exec.Command(bin, "-generate", "types,std-http-server", "-package", "api", spec).Output()
	if err != nil {
		b.Fatalf("oapi-codegen: %v", err)
	}
	oapi := filepath.Join(dir, "oapimod")
	if err := os.MkdirAll(filepath.Join(oapi, "api"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(oapi, "api", "api.gen.go"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"mod", "init", "example.com/oapi"}, {"mod", "tidy"}} {
		if out, err := goCommand(oapi, args...).CombinedOutput(); err != nil {
			b.Skipf("go %v for oapi-codegen's output (needs the module proxy): %v\n%s", args, err, out)
		}
	}
	b.Run("oapi-codegen", func(b *testing.B) { benchmarkRebuild(b, oapi, "api/api.gen.go") })
}

// benchmarkRebuild builds ./api/... in the module dir, then rebuilds it
// b.N times after appending a comment to file, reporting CPU and peak RSS.
func benchmarkRebuild(b *testing.B, dir, file string) {
	if out, err := goCommand(dir, "build", "./api/...").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var cpu, peak int64
	n := 0
	for b.Loop() {
		f, err := os.OpenFile(filepath.Join(dir, file), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(f, "\n// rebuild %d %d\n", os.Getpid(), n)
		f.Close()
		c := exec.Command(os.Args[0], "--", "go", "build", "./api/...")
		c.Dir = dir
		c.Env = append(os.Environ(), launchEnv+"=1", "GOFLAGS=-mod=mod", "GOWORK=off")
		var errOut bytes.Buffer
		c.Stderr = &errOut
		if err := c.Run(); err != nil {
			b.Fatalf("go build: %v\n%s", err, errOut.Bytes())
		}
		cpu += launchMetric(b, errOut.Bytes(), "cpu-ms")
		peak = max(peak, launchMetric(b, errOut.Bytes(), "maxrss-KiB"))
		n++
	}
	b.ReportMetric(float64(cpu)/float64(n)/1000, "CPU-s/build")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
}

// launchMetric reads a figure the launcher printed ("cpu-ms 1234").
func launchMetric(b *testing.B, out []byte, name string) int64 {
	_, tail, ok := bytes.Cut(out, []byte("\n"+name+" "))
	line, _, _ := bytes.Cut(tail, []byte("\n"))
	v, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
	if !ok || err != nil {
		b.Fatalf("no %s in %q", name, out)
	}
	return v
}

// multiplySpec returns n copies of a spec's paths and components in one
// JSON document: copy i under /c<i>, with its component names, references
// and operation IDs suffixed C<i>, and a root x-idempotent: {}.
func multiplySpec(t testing.TB, data []byte, n int) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var rename func(v any, sfx string) any
	rename = func(v any, sfx string) any {
		switch v := v.(type) {
		case map[string]any:
			m := make(map[string]any, len(v))
			for k, x := range v {
				s, ok := x.(string)
				switch {
				case ok && k == "$ref" && strings.HasPrefix(s, "#/components/"):
					m[k] = s + sfx
				case ok && k == "operationId":
					m[k] = s + sfx
				default:
					m[k] = rename(x, sfx)
				}
			}
			return m
		case []any:
			l := make([]any, len(v))
			for i, x := range v {
				l[i] = rename(x, sfx)
			}
			return l
		}
		return v
	}
	paths, comps := map[string]any{}, map[string]map[string]any{}
	for i := 1; i <= n; i++ {
		sfx := fmt.Sprintf("C%d", i)
		for p, item := range doc["paths"].(map[string]any) {
			paths[fmt.Sprintf("/c%d%s", i, p)] = rename(item, sfx)
		}
		c, _ := doc["components"].(map[string]any)
		for kind, m := range c {
			if comps[kind] == nil {
				comps[kind] = map[string]any{}
			}
			for name, v := range m.(map[string]any) {
				if kind == "securitySchemes" {
					comps[kind][name] = v
				} else {
					comps[kind][name+sfx] = rename(v, sfx)
				}
			}
		}
	}
	doc["paths"], doc["components"], doc["x-idempotent"] = paths, comps, map[string]any{}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
