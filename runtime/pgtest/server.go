package pgtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// StartServers starts n PostgreSQL servers of the test's own, at once, with
// the repository's scripts/pg.sh (each a fresh data directory on a free
// loopback port), stopped and deleted when the test ends, and returns
// their connection strings. Tests that need several servers (shards, say)
// start them with it; like URL, it skips without DATABASE_URL, or fails
// under CI=true.
func StartServers(tb testing.TB, n int) []string {
	tb.Helper()
	URL(tb)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "pg.sh")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(script, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("pgtest: pg.sh %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out), nil
	}
	urls := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dir, err := os.MkdirTemp("", "pgtest-server")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			if _, err := run("stop", dir); err != nil {
				tb.Error(err)
			}
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := run("start", dir)
			if err != nil {
				errs[i] = err
				return
			}
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "export DATABASE_URL="); ok {
					urls[i] = strings.Trim(v, "'")
				}
			}
			if urls[i] == "" {
				errs[i] = fmt.Errorf("pgtest: pg.sh start printed no DATABASE_URL: %q", out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return urls
}
