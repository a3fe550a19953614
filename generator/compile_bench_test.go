package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
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

	oapi := oapiModule(b, dir, spec)
	b.Run("oapi-codegen", func(b *testing.B) { benchmarkRebuild(b, oapi, "api/api.gen.go") })
}

// oapiModule writes oapi-codegen's server for spec (types,std-http-server)
// as package api of a module example.com/oapi under dir, and returns the
// module's directory; it skips b when oapi-codegen or its runtime cannot be
// fetched (no module proxy).
func oapiModule(b *testing.B, dir, spec string) string {
	b.Helper()
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
	return oapi
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

// BenchmarkCompileFormatGen measures the compile of ogen's format_gen
// (1,072 operations, every string format and array shape, all POSTs; a root
// `x-idempotent: {}`) against oapi-codegen's output for the same spec:
// idemgen's package as generated by default (split: more than 500
// operations, so four packages; their compiles summed), idemgen's in one
// package (split: false), and oapi-codegen's. Each iteration rebuilds all
// three in turn, counting the generated packages' compiles only
// (compilesEnv), and the ratios are taken within an iteration, their
// median reported: a shared machine's speed drifts more between minutes
// than between the builds of one iteration. Run with -benchtime=5x.
func BenchmarkCompileFormatGen(b *testing.B) {
	dir := b.TempDir()
	_, data := readSpec(b, "format_gen.json.gz")
	spec := filepath.Join(dir, "format_gen.json")
	if err := os.WriteFile(spec, addRootExtension(b, data), 0o644); err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name, dir string
		cpu       []float64 // s, per iteration
		peak      int64     // KiB, the largest compile
	}
	var vs []*variant
	for _, v := range []struct {
		name  string
		split *bool
	}{{"idemgen", nil}, {"idemgen-one-package", new(false)}} {
		files, _, err := Generate(Config{Spec: spec, Package: "api", Output: "api", Split: v.split, ImportPath: generatedModule + "/api"})
		if err != nil {
			b.Fatal(err)
		}
		vs = append(vs, &variant{name: v.name, dir: tempModule(b, files)})
	}
	oapi := oapiModule(b, dir, spec)
	vs = append(vs, &variant{name: "oapi-codegen", dir: oapi})

	log := filepath.Join(dir, "compiles.log")
	build := func(v *variant, n int) (cpu float64, peak int64) {
		// A comment appended to every generated file makes go build
		// compile each generated package again, and nothing else.
		err := filepath.WalkDir(filepath.Join(v.dir, "api"), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".gen.go") {
				return err
			}
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			fmt.Fprintf(f, "\n// rebuild %d %d\n", os.Getpid(), n)
			return f.Close()
		})
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(log)
		c := goCommand(v.dir, "build", "-toolexec", os.Args[0], "./api/...")
		c.Env = append(c.Env, compilesEnv+"="+log)
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("go build (%s): %v\n%s", v.name, err, out)
		}
		data, err := os.ReadFile(log)
		if err != nil {
			b.Fatalf("%s: no compile was logged: %v", v.name, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var pkg string
			var ms, kib int64
			if _, err := fmt.Sscan(line, &pkg, &ms, &kib); err != nil {
				b.Fatalf("%s: compile log %q: %v", v.name, line, err)
			}
			cpu += float64(ms) / 1000
			peak = max(peak, kib)
		}
		return cpu, peak
	}
	for _, v := range vs {
		build(v, -1) // the dependencies, compiled once under -toolexec
	}
	n := 0
	for b.Loop() {
		for _, v := range vs {
			cpu, peak := build(v, n)
			v.cpu = append(v.cpu, cpu)
			v.peak = max(v.peak, peak)
		}
		n++
	}
	oapiRun := vs[len(vs)-1]
	for _, v := range vs {
		b.ReportMetric(median(v.cpu), v.name+"-CPU-s")
		b.ReportMetric(float64(v.peak)/1024, v.name+"-peak-MiB")
		if v == oapiRun {
			continue
		}
		ratios := make([]float64, len(v.cpu))
		for i := range v.cpu {
			ratios[i] = v.cpu[i] / oapiRun.cpu[i]
		}
		b.ReportMetric(median(ratios), v.name+"-x-oapi-codegen")
		b.Logf("%s: CPU × oapi-codegen's by iteration: %.2f", v.name, ratios)
	}
}

// median is the middle value of xs (the mean of the middle two when even).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
