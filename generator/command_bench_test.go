package generator

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// oapiCodegen is the version of oapi-codegen BenchmarkCommand compares with.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// BenchmarkCommand runs whole commands on Stripe's and GitHub's specs (each
// with a root `x-idempotent: {}`), each as a process of its own so that its
// peak RSS is its own: idemgen generate, and oapi-codegen generating types
// and a net/http server (built in a module of its own from the module proxy;
// the sub-benchmark is skipped when that fails, or when oapi-codegen refuses
// the spec). It reports the wall time per run, the peak RSS and the
// generated lines per operation (every .gen.go file written).
func BenchmarkCommand(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "idemgen")
	build := exec.Command("go", "build", "-o", bin, "./cmd/idemgen")
	build.Dir = repoRoot(b)
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	// GitHub's spec is split by default (SplitAbove), which needs the
	// import path of the output: its module is this go.mod.
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	oapi := sync.OnceValues(func() (string, error) { return oapiCodegenBinary(filepath.Join(dir, "oapi")) })
	for _, tc := range []struct {
		name, file string
		ops        int
	}{
		{"stripe", "stripe-spec3.yaml", 468},
		{"github", "api.github.com.json.gz", 1223},
	} {
		name, data := readSpec(b, tc.file)
		spec := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(spec, addRootExtension(b, data), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run("idemgen/"+tc.name, func(b *testing.B) {
			out := filepath.Join(dir, "idemgen-"+tc.name)
			runCommand(b, exec.Command(bin, "generate", "-spec", spec, "-output", out), nil)
			lines := 0
			err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !strings.HasSuffix(p, ".gen.go") {
					return err
				}
				src, err := os.ReadFile(p)
				lines += bytes.Count(src, []byte("\n"))
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(lines)/float64(tc.ops), "lines/operation")
		})
		b.Run("oapi-codegen/"+tc.name, func(b *testing.B) {
			bin, err := oapi()
			if err != nil {
				b.Skip(err)
			}
			var src bytes.Buffer
			runCommand(b, exec.Command(bin, "-generate", "types,std-http-server", "-package", "api", spec), &src)
			b.ReportMetric(float64(bytes.Count(src.Bytes(), []byte("\n")))/float64(tc.ops), "lines/operation")
		})
	}
}

// oapiCodegenBinary installs oapi-codegen into mod (a module of its own,
// from the module proxy) and returns the binary's path.
func oapiCodegenBinary(mod string) (string, error) {
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"mod", "init", "bench"}, {"install", oapiCodegen}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOBIN="+mod, "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %v (needs the module proxy): %v\n%s", args, err, out)
		}
	}
	return filepath.Join(mod, "oapi-codegen"), nil
}

// launchEnv makes the test binary a launcher: it runs the command in its
// arguments and prints the command's peak RSS. Linux charges a process that
// a large one forked with the parent's peak (the address space it shared
// until exec), so the benchmark measures through this small process rather
// than from itself.
const launchEnv = "IDEMGEN_BENCH_LAUNCH"

// compilesEnv makes the test binary a go build -toolexec wrapper: it runs
// the tool, and for a compile of a package under example.com/ appends its
// CPU (user + sys, ms) and peak RSS (KiB) to the file the variable names,
// one line each: BenchmarkCompileFormatGen counts the generated packages'
// compiles alone, not the go command's own work nor the dependencies'.
const compilesEnv = "IDEMGEN_BENCH_COMPILES"

func TestMain(m *testing.M) {
	if log := os.Getenv(compilesEnv); log != "" {
		os.Exit(toolexec(log, os.Args[1:]))
	}
	if os.Getenv(launchEnv) == "" {
		code := m.Run()
		removeRunModule()
		os.Exit(code)
	}
	args := flagArgs(os.Args[1:])
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Fprintf(os.Stderr, "\ncpu-ms %d\nmaxrss-KiB %d\n", cpu.Milliseconds(), ru.Maxrss)
	os.Exit(0)
}

// toolexec runs the tool in args and logs a generated package's compile.
func toolexec(log string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pkg := ""
	for i, a := range args {
		if a == "-p" && i+1 < len(args) {
			pkg = args[i+1]
		}
	}
	if filepath.Base(args[0]) == "compile" && strings.HasPrefix(pkg, "example.com/") {
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		f, ferr := os.OpenFile(log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if ferr == nil {
			fmt.Fprintf(f, "%s %d %d\n", pkg, cpu.Milliseconds(), ru.Maxrss)
			f.Close()
		}
	}
	return cmd.ProcessState.ExitCode()
}

// flagArgs drops the test flags before "--".
func flagArgs(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[i+1:]
		}
	}
	return args
}

// runCommand runs cmd b.N times through the launcher and reports the
// highest peak RSS (MiB) of its runs; stdout, when not nil, receives the
// last run's output.
func runCommand(b *testing.B, cmd *exec.Cmd, stdout *bytes.Buffer) {
	b.Helper()
	var peak int64
	for b.Loop() {
		c := exec.Command(os.Args[0], append([]string{"--", cmd.Path}, cmd.Args[1:]...)...)
		c.Env = append(os.Environ(), launchEnv+"=1")
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Run(); err != nil {
			if strings.Contains(cmd.Path, "oapi-codegen") {
				// GitHub's spec: "duplicate typename ... can't auto-rename".
				b.Skipf("%s refuses the spec: %v\n%s", filepath.Base(cmd.Path), err, lastLines(errOut.Bytes(), 3))
			}
			b.Fatalf("%s: %v\n%s", cmd, err, errOut.Bytes())
		}
		_, tail, _ := bytes.Cut(errOut.Bytes(), []byte("\nmaxrss-KiB "))
		kib, err := strconv.ParseInt(string(bytes.TrimSpace(tail)), 10, 64)
		if err != nil {
			b.Fatalf("%s: no peak RSS in %q", cmd, errOut.Bytes())
		}
		peak = max(peak, kib)
		if stdout != nil {
			*stdout = out
		}
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
}

// lastLines is the last n lines of out.
func lastLines(out []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}
