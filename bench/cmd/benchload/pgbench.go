package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The database's floors, measured in the same rounds as the HTTP variants:
// pgbench runs one of bench/pgbench's scripts (base.sql: the business
// transaction alone, one durable commit; lease.sql: lease mode's two durable
// commits) from conc clients for as long as a run lasts, on the database the
// server uses. No HTTP, no Go: what the variants would reach if everything
// but PostgreSQL cost nothing.

// peer is a server of the bench spec other than benchserver (-peers).
type peer struct{ name, bin string }

func parsePeers(s string) ([]peer, error) {
	var out []peer
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		name, bin, ok := strings.Cut(f, "=")
		if !ok || name == "" || bin == "" {
			return nil, fmt.Errorf("%q is not name=binary", f)
		}
		out = append(out, peer{name: name, bin: bin})
	}
	return out, nil
}

// pgbenchBin is pgbench from PG_BIN, or from the newest PostgreSQL installed
// under /usr/lib/postgresql, or from PATH.
func pgbenchBin() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return filepath.Join(d, "pgbench"), nil
	}
	if ds, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench"); len(ds) > 0 {
		sort.Slice(ds, func(i, j int) bool { return version(ds[i]) < version(ds[j]) })
		return ds[len(ds)-1], nil
	}
	return exec.LookPath("pgbench")
}

// version is the major version in a /usr/lib/postgresql/N/bin path.
func version(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// pgbench runs script from conc clients for d (whole seconds, at least one)
// and reports its transactions as a run's requests.
func (b *bench) pgbench(script string, conc int, d time.Duration) (run, error) {
	bin, err := pgbenchBin()
	if err != nil {
		return run{}, fmt.Errorf("pgbench: %w", err)
	}
	secs := max(int(d/time.Second), 1)
	db0 := clusterCPU(b.postmaster)
	cmd := exec.Command(bin, "-n", "-M", "prepared", "-c", strconv.Itoa(conc), "-j", "2",
		"-T", strconv.Itoa(secs), "-f", script, b.db)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return run{}, fmt.Errorf("pgbench -f %s: %w: %s", script, err, out)
	}
	cpu := cpuTimes{db: clusterCPU(b.postmaster) - db0, client: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	for _, line := range strings.Split(string(out), "\n") {
		// "number of transactions actually processed: 12345"
		if v, ok := strings.CutPrefix(line, "number of transactions actually processed: "); ok {
			n, err := strconv.Atoi(strings.Fields(v)[0])
			if err != nil {
				break
			}
			return run{n: n, elapsed: time.Duration(secs) * time.Second, cpu: cpu}, nil
		}
	}
	return run{}, fmt.Errorf("pgbench -f %s: no transaction count in its output: %s", script, out)
}
