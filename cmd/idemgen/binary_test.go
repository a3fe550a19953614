package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// TestMain removes the directory binary built the command in: one per
// run, which would otherwise stay behind in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds the idemgen command once for the tests that run it as a
// process, as CI and users do: exit codes are the process's, not run's.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "idemgen-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "idemgen")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("go build ./cmd/idemgen: %v", binErr)
	}
	return binPath
}

// execute runs the built idemgen with args in dir.
func execute(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// TestBinaryExitCodes runs the idemgen binary: lint passes the payments
// example, whose quotePayment opts out deliberately, with a note; fails it
// with -require; fails a silent gap; and generate refuses a policy the
// runtime would refuse at start, naming the file, the operation and the
// JSON path.
func TestBinaryExitCodes(t *testing.T) {
	payments, err := filepath.Abs(filepath.Join("..", "..", "examples", "payments", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "gap.yaml"), spec)
	write(t, filepath.Join(dir, "lease.yaml"), "x-idempotent: {}\n"+strings.Replace(spec, "x-idempotent: false", "x-idempotent: {mode: lease, lease: 3h, ttl: 2h}", 1))
	write(t, filepath.Join(dir, "redirect.yaml"), "x-idempotent: {}\n"+strings.Replace(spec, "x-idempotent: false", "x-idempotent: {replayStatuses: [302]}", 1))
	optOut := `idemgen: note: openapi.yaml: operation "quotePayment" (POST /payments/quote): not idempotent: it opts out with x-idempotent: false`
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string // lines that must be there
		not    string   // a fragment that must not
		stderr string
	}{
		{"opt-out is a note", []string{"lint", payments}, 0, []string{optOut}, "error:", ""},
		{"opt-out refused with -require", []string{"lint", "-require", payments}, 1,
			[]string{`idemgen: error: openapi.yaml: operation "quotePayment" (POST /payments/quote): x-idempotent: false is not allowed: every POST and PATCH must be idempotent (-require)`}, "note:", ""},
		{"silent gap", []string{"lint", "gap.yaml"}, 1,
			[]string{`idemgen: error: gap.yaml: operation "createOrder" (POST /orders): not idempotent: no x-idempotent on the operation or at the root (annotate it, or opt out with x-idempotent: false)`}, "", ""},
		{"lease not shorter than ttl, lint", []string{"lint", "lease.yaml"}, 1,
			[]string{`idemgen: error: lease.yaml: line 13: operation "cancelOrder": x-idempotent.lease: 3h must be shorter than ttl 2h`}, "", ""},
		{"lease not shorter than ttl, generate", []string{"generate", "-spec", "lease.yaml", "-output", "out"}, 1, nil, "",
			`lease.yaml: line 13: operation "cancelOrder": x-idempotent.lease: 3h must be shorter than ttl 2h`},
		{"3xx replay status, generate", []string{"generate", "-spec", "redirect.yaml", "-output", "out"}, 1, nil, "",
			`redirect.yaml: line 13: operation "cancelOrder": x-idempotent.replayStatuses[0]: 302 is not a 4xx or 5xx status`},
		{"usage", []string{"lint"}, 2, nil, "", "idemgen: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, dir, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			lines := strings.Split(stdout, "\n")
			for _, want := range tc.stdout {
				found := false
				for _, l := range lines {
					found = found || l == want
				}
				if !found {
					t.Errorf("stdout lacks the line\n%s\nstdout:\n%s", want, stdout)
				}
			}
			if tc.not != "" && strings.Contains(stdout, tc.not) {
				t.Errorf("stdout has %q:\n%s", tc.not, stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("a refused generate wrote %s (%v)", filepath.Join(dir, "out"), err)
	}
}
