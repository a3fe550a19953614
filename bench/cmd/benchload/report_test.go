package main

import (
	"strings"
	"testing"
	"time"
)

// TestWriteTableAgainstHandwritten checks that every variant is reported as
// a ratio of the hand-written handler's rate in the same round (not of
// medians), that idemgen's plain path stays a second reference, and that
// lease is set against pgbench's two-commit floor round by round.
func TestWriteTableAgainstHandwritten(t *testing.T) {
	runs := func(rps ...int) []run {
		var out []run
		for _, n := range rps {
			out = append(out, run{n: n, elapsed: time.Second})
		}
		return out
	}
	scenarios := []scenario{{name: "handwritten"}, {name: "baseline"}, {name: "lease"}, {name: "pgbench-lease", pgbench: "lease.sql"}}
	results := map[string][]run{
		rkey("handwritten", 32):   runs(1000, 2000, 1000),
		rkey("baseline", 32):      runs(900, 1900, 800),
		rkey("lease", 32):         runs(400, 600, 450),
		rkey("pgbench-lease", 32): runs(500, 600, 500),
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
