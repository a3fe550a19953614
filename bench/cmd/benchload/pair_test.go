package main

import (
	"strings"
	"testing"
	"time"
)

// TestWritePair checks the paired report's arithmetic: the second table's
// rate over the first's is taken round by round (the same minutes), and
// its median is the middle of those ratios, not a ratio of medians.
func TestWritePair(t *testing.T) {
	runs := func(rps ...int) []run {
		var out []run
		for _, n := range rps {
			out = append(out, run{n: n, elapsed: time.Second})
		}
		return out
	}
	small := scalePoint{records: 10_000,
		baseline: runs(1000, 1000, 1000), atomic: runs(1000, 2000, 500), replay: runs(2000, 2000, 2000)}
	large := scalePoint{records: 50_000_000,
		baseline: runs(1000, 1000, 1000), atomic: runs(800, 1900, 500), replay: runs(2000, 1800, 2200)}
	var b strings.Builder
	writePair(&b, []pairSide{{point: small}, {point: large}})
	out := b.String()
	for _, want := range []string{
		"The 50000000-record table's rate over the 10000-record table's",
		// Per round 0.80, 0.95, 1.00: median 0.95 (the ratio of the
		// medians, 800 over 1000, would be 0.80).
		"| atomic | 0.95 | 0.80, 0.95, 1.00 |",
		"| replay | 1.00 | 1.00, 0.90, 1.10 |",
		"| baseline | 1.00 | 1.00, 1.00, 1.00 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
