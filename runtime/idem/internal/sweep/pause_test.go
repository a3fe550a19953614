package sweep

import (
	"testing"
	"time"
)

// TestSweeperPause: the pause after a statement keeps the statements to
// the budget's share of the time, and shortens so that the sweeper deletes
// KeepUp times the insert rate when the budget would fall behind it.
func TestSweeperPause(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name                 string
		d                    time.Duration
		rows                 int64
		budget, keepUp, rate float64
		want                 time.Duration
	}{
		{"nothing deleted: the budget", 10 * ms, 0, 0.1, 1.5, 1000, 90 * ms},
		{"the budget is faster than needed", 10 * ms, 1000, 0.1, 1.5, 1000, 90 * ms},
		{"the budget would fall behind", 100 * ms, 1000, 0.1, 1.5, 2000, 233 * ms},
		{"not even without a pause", 100 * ms, 1000, 0.1, 1.5, 10000, 0},
		{"no rate measured yet", 100 * ms, 1000, 0.1, 1.5, 0, 900 * ms},
		{"KeepUp off", 100 * ms, 1000, 0.1, -1, 2000, 900 * ms},
		{"budget 1", 100 * ms, 1000, 1, 1.5, 2000, 0},
	} {
		got := pause(c.d, c.rows, c.budget, c.keepUp, c.rate)
		if d := got - c.want; d < -ms || d > ms {
			t.Errorf("%s: pause %v, want %v", c.name, got, c.want)
		}
	}
}
