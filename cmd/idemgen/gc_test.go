package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: generate defers collection to its heap budget, unless GOGC or
// GOMEMLIMIT says otherwise.
func TestTuneGC(t *testing.T) {
	restore := func(percent int, limit int64) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
	defer restore(debug.SetGCPercent(100), debug.SetMemoryLimit(-1))

	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "100")
			restore(100, 1<<62)
			if tuneGC() {
				t.Errorf("tuned with %s set", env)
			}
			if p := debug.SetGCPercent(100); p != 100 {
				t.Errorf("GC percent %d with %s set", p, env)
			}
		})
	}
	t.Run("neither", func(t *testing.T) {
		t.Setenv("GOGC", "")
		t.Setenv("GOMEMLIMIT", "")
		restore(100, 1<<62)
		if !tuneGC() {
			t.Error("not tuned")
		}
		if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != -1 || l != generateHeapBudget {
			t.Errorf("GC percent %d, memory limit %d; want -1, %d", p, l, generateHeapBudget)
		}
	})
}
