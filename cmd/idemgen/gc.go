package main

import (
	"os"
	"runtime/debug"
)

// generateHeapBudget is the heap idemgen generate grows to before its first
// garbage collection. Generation runs once and exits, and most of what it
// allocates (kin-openapi's decoding, go/format's trees) is garbage within
// the same run: collecting it as it goes (GOGC=100) was a quarter of the CPU
// time on Stripe's spec. With collection deferred to this budget, Stripe
// generates in about 0.7 of the CPU time at 266 MiB peak RSS (300 MiB is its
// budget), and GitHub's spec, whose live heap is larger, in the same time
// at 270 rather than 400 MiB (BENCHMARKS.md). The limit is soft: a spec
// that needs more heap gets it, with the collector running more often (at
// most half the CPU, the runtime's own cap).
const generateHeapBudget = 256 << 20

// tuneGC defers garbage collection to generateHeapBudget unless the user
// chose for themselves with GOGC or GOMEMLIMIT, and reports whether it did.
func tuneGC() bool {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	debug.SetMemoryLimit(generateHeapBudget)
	debug.SetGCPercent(-1)
	return true
}
