//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestServersStopped runs the built benchload against a built benchserver
// and checks that however benchload ends — done, failing, SIGTERM, SIGINT,
// kill -9 — the server it started is gone when benchload is. The server
// runs through a shell wrapper that first starts a child of its own (a
// sleep), so a stop that signals the server but not its process group
// leaves that child running and fails the test too.
func TestServersStopped(t *testing.T) {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set (CI=true: a database test fails rather than skips)")
		}
		t.Skip("DATABASE_URL is not set")
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir+"/", ".", "../benchserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	wrapper := filepath.Join(dir, "server.sh")
	script := "#!/bin/sh\nsleep 600 &\necho \"grandchild $!\" >&2\nexec " + filepath.Join(dir, "benchserver") + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Tables of its own: a schema for the runs, and one whose bench_payments
	// refuses every insert, so that the server answers 500 and benchload
	// fails while its server runs (as a server of another schema version
	// did in an A/B run of issue 23).
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	good, broken := fmt.Sprintf("benchload_stop_%d", os.Getpid()), fmt.Sprintf("benchload_stop_broken_%d", os.Getpid())
	for _, sql := range []string{
		"DROP SCHEMA IF EXISTS " + good + " CASCADE", "DROP SCHEMA IF EXISTS " + broken + " CASCADE",
		"CREATE SCHEMA " + good, "CREATE SCHEMA " + broken,
		"CREATE TABLE " + broken + `.bench_payments (id bigserial PRIMARY KEY, idempotency_key text,
			amount bigint NOT NULL CHECK (amount < 0), currency text NOT NULL, reference text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now())`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+good+" CASCADE")
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+broken+" CASCADE")
	})
	inSchema := func(s string) string {
		sep := "?"
		if strings.Contains(dbURL, "?") {
			sep = "&"
		}
		return dbURL + sep + "search_path=" + s
	}
	short := []string{"-duration", "100ms", "-rounds", "1", "-concurrency", "1", "-scenarios", "baseline"}

	for _, tc := range []struct {
		name   string
		schema string
		args   []string
		signal syscall.Signal // sent once the server answers; 0: none
		want   int            // benchload's exit status
	}{
		{name: "done", schema: good, args: short, want: 0},
		{name: "failing", schema: broken, args: short, want: 1},
		{name: "SIGTERM", schema: good, args: []string{"-duration", "1m", "-scenarios", "baseline"}, signal: syscall.SIGTERM, want: 128 + int(syscall.SIGTERM)},
		{name: "SIGINT", schema: good, args: []string{"-duration", "1m", "-scenarios", "baseline"}, signal: syscall.SIGINT, want: 128 + int(syscall.SIGINT)},
		{name: "SIGKILL", schema: good, args: []string{"-duration", "1m", "-scenarios", "baseline"}, signal: syscall.SIGKILL, want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-server", wrapper, "-database-url", inSchema(tc.schema)}, tc.args...)
			cmd := exec.Command(filepath.Join(dir, "benchload"), args...)
			// Its stderr through a pipe of the test's own, read line by
			// line while it runs; not read to its end, which a process
			// left behind holding it open would postpone forever.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd.Stderr = w
			err = cmd.Start()
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 1<<14)
			go func() {
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			var server, grandchild int
			// Whatever the outcome, nothing of this test stays running.
			t.Cleanup(func() {
				for _, pid := range []int{server, grandchild} {
					if pid > 0 {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			answers := regexp.MustCompile(`^benchload: .* \(pid (\d+)\) answers on `)
			var log strings.Builder
			read := func(line string) {
				log.WriteString(line + "\n")
				if n, ok := strings.CutPrefix(line, "grandchild "); ok {
					grandchild, _ = strconv.Atoi(n)
				}
				if m := answers.FindStringSubmatch(line); m != nil {
					server, _ = strconv.Atoi(m[1])
					if tc.signal != 0 {
						if err := cmd.Process.Signal(tc.signal); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			for waited != nil {
				select {
				case line, ok := <-lines:
					if !ok {
						lines = nil
						continue
					}
					read(line)
				case err = <-waited:
					waited = nil
				}
			}
			// What benchload wrote before it ended, up to the pipe's end
			// or 2 s without a line (after kill -9, the server's child
			// holds it open until the cleanup).
		drain:
			for lines != nil && tc.signal != syscall.SIGKILL {
				select {
				case line, ok := <-lines:
					if !ok {
						break drain
					}
					read(line)
				case <-time.After(2 * time.Second):
					break drain
				}
			}
			code := cmd.ProcessState.ExitCode()
			if code != tc.want {
				t.Errorf("benchload: %v (status %d), want status %d; its stderr:\n%s", err, code, tc.want, log.String())
			}
			if server == 0 || grandchild == 0 {
				t.Fatalf("the server's pid (%d) or its child's (%d) not seen; benchload's stderr:\n%s", server, grandchild, log.String())
			}
			if tc.signal == syscall.SIGKILL {
				// Nothing of benchload ran: the kernel's SIGKILL
				// (Pdeathsig) reaches the server, after benchload's end.
				// Its own child is beyond it (its parent is not benchload).
				deadline := time.Now().Add(10 * time.Second)
				for running(server) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if running(server) {
					t.Errorf("benchserver (pid %d) still runs 10 s after benchload was killed", server)
				}
				return
			}
			// benchload stopped and waited for the server before it ended.
			if running(server) {
				t.Errorf("benchserver (pid %d) still runs after benchload ended", server)
			}
			// The server's child got SIGTERM and SIGKILL with the group; a
			// signal is delivered after kill(2) returns, and on a loaded
			// machine the child can still be scheduled when benchload has
			// ended. Only a child nobody signalled lives on (for 600 s).
			deadline := time.Now().Add(10 * time.Second)
			for running(grandchild) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if running(grandchild) {
				t.Errorf("the server's child (pid %d) still runs 10 s after benchload ended", grandchild)
			}
		})
	}
}

// running reports whether pid is a live process (a zombie is not: it has
// ended and waits only to be reaped, by an init that may never do so).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
