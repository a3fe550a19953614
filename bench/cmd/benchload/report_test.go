package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWriteTableAgainstHandwritten checks that every variant is reported as
// a ratio of the hand-written handler's rate in the same round (not of
// medians), that idemgen's plain path stays a second reference, and that
// lease is set against pgbench's two-commit floor and replay against the
// naive middleware's replay round by round.
func TestWriteTableAgainstHandwritten(t *testing.T) {
	runs := func(rps ...int) []run {
		var out []run
		for _, n := range rps {
			out = append(out, run{n: n, elapsed: time.Second})
		}
		return out
	}
	scenarios := []scenario{{name: "handwritten"}, {name: "baseline"}, {name: "lease"}, {name: "pgbench-lease", pgbench: "lease.sql"},
		{name: "replay"}, {name: "naive-replay"}}
	results := map[string][]run{
		rkey("handwritten", 32):   runs(1000, 2000, 1000),
		rkey("baseline", 32):      runs(900, 1900, 800),
		rkey("lease", 32):         runs(400, 600, 450),
		rkey("pgbench-lease", 32): runs(500, 600, 500),
		rkey("replay", 32):        runs(1700, 3400, 1800),
		rkey("naive-replay", 32):  runs(2000, 4000, 2000),
	}
	var b strings.Builder
	writeTable(&b, scenarios, []int{32}, results, nil, nil)
	out := b.String()
	for _, want := range []string{
		"| × handwritten | per round | × baseline |",
		// 900/1000, 1900/2000, 800/1000 round by round; the medians'
		// ratio would be 900/1000 too, the per-round list tells them apart.
		"| baseline | 32 | 900 | 0.90 | 0.90 0.95 0.80 | 1.00 |",
		"| lease | 32 | 450 | 0.40 | 0.40 0.30 0.45 | 0.44 |",
		"| pgbench-lease | 32 | 500 | 0.50 | 0.50 0.30 0.50 | 0.56 |  |  |  |  |  |  |",
		"| lease ÷ pgbench-lease | 32 | 0.90 | 0.80 1.00 0.90 |",
		"| replay ÷ naive-replay | 32 | 0.85 | 0.85 0.85 0.90 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestParsePeers(t *testing.T) {
	got, err := parsePeers("ogen=bin/ogen, oapi-codegen=bin/oapi-codegen")
	if err != nil || len(got) != 2 || got[1] != (peer{"oapi-codegen", "bin/oapi-codegen"}) {
		t.Errorf("parsePeers: %v, %v", got, err)
	}
	if _, err := parsePeers("ogen"); err == nil || !strings.Contains(err.Error(), `"ogen" is not name=binary`) {
		t.Errorf("parsePeers(ogen): %v, want an error naming it", err)
	}
}

// TestCPUPerReq: the CPU columns are per request and the median over
// rounds of each process's share.
func TestCPUPerReq(t *testing.T) {
	runs := []run{
		{n: 1000, cpu: cpuTimes{server: 50 * time.Millisecond, db: 80 * time.Millisecond, client: 30 * time.Millisecond}},
		{n: 2000, cpu: cpuTimes{server: 120 * time.Millisecond, db: 200 * time.Millisecond, client: 40 * time.Millisecond}},
		{n: 1000, cpu: cpuTimes{server: 40 * time.Millisecond, db: 90 * time.Millisecond, client: 30 * time.Millisecond}},
	}
	// Per request: server 50, 60, 40 µs; database 80, 100, 90; client 30, 20, 30.
	if got, want := cpuPerReq(runs), "50 + 90 + 30 = 170"; got != want {
		t.Errorf("cpuPerReq = %q, want %q", got, want)
	}
}

// TestProcCPU: /proc's times of a process are its user and system time,
// as getrusage reports them (to a clock tick, 10 ms).
func TestProcCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	x := 0
	for rusage() < 300*time.Millisecond { // mostly user time
		for i := range 1_000_000 {
			x += i
		}
	}
	before := rusage()
	got := procCPU("self")
	after := rusage()
	if got < before-2*clockTick || got > after+2*clockTick {
		t.Errorf("procCPU(self) = %v, getrusage %v..%v", got, before, after)
	}
	if procCPU("nonexistent") != 0 || clusterCPU("") != 0 {
		t.Error("times of no process are not 0")
	}
	_ = x
}
