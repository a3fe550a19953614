// Package redistest gives tests a real Redis: the server `make test`
// starts through scripts/redis.sh (REDIS_URL), or a private one, started by
// the same script, that a test may stop, kill, restart, pause or flush.
//
// Without REDIS_URL a test is skipped on a developer's machine and fails
// under CI=true: a Redis test never passes by not running.
package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// URL returns REDIS_URL, skipping the test when it is unset, or failing it
// when CI=true.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("redistest: REDIS_URL is not set and CI=true: Redis tests must run in CI (use make test)")
		}
		tb.Skip("redistest: REDIS_URL is not set; run the test under scripts/redis.sh run (make test does)")
	}
	return url
}

// Server is a private Redis of one test, stopped when the test ends.
type Server struct {
	// URL reaches it (redis://127.0.0.1:port/0); it stays the same across
	// Kill and Restart.
	URL    string
	tb     testing.TB
	script string
	dir    string
}

// Start starts a private server with scripts/redis.sh (REDIS_SH, which
// `scripts/redis.sh run` sets, or the script found above the working
// directory). It skips or fails as URL does without REDIS_URL.
func Start(tb testing.TB) *Server {
	tb.Helper()
	URL(tb)
	script := os.Getenv("REDIS_SH")
	if script == "" {
		script = findScript(tb)
	}
	s := &Server{tb: tb, script: script, dir: filepath.Join(tb.TempDir(), "redis")}
	out := s.run("start", s.dir)
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "export REDIS_URL="); ok {
			s.URL = strings.Trim(v, "'")
		}
	}
	if s.URL == "" {
		tb.Fatalf("redistest: %s start printed no REDIS_URL:\n%s", script, out)
	}
	tb.Cleanup(func() { _, _ = exec.Command(s.script, "stop", s.dir).CombinedOutput() })
	return s
}

func findScript(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "scripts", "redis.sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("redistest: scripts/redis.sh not found above the working directory; set REDIS_SH")
		}
		dir = parent
	}
}

func (s *Server) run(args ...string) string {
	s.tb.Helper()
	out, err := exec.Command(s.script, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		s.tb.Fatalf("redistest: %s %s: %v\n%s%s", s.script, strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// Kill kills the server with SIGKILL; Restart brings it back, empty.
func (s *Server) Kill() { s.tb.Helper(); s.run("kill", s.dir) }

// Restart stops the server if it runs and starts it again, empty, on the
// same port.
func (s *Server) Restart() { s.tb.Helper(); s.run("restart", s.dir) }

// Do runs one command through redis-cli (FLUSHALL, CLIENT PAUSE 500,
// DEBUG SLEEP 1, ...) and returns its output.
func (s *Server) Do(args ...string) string {
	s.tb.Helper()
	bin, err := os.ReadFile(filepath.Join(s.dir, "bin"))
	if err != nil {
		s.tb.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(strings.TrimSpace(string(bin)), "redis-cli"), append([]string{"-u", s.URL}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.tb.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
