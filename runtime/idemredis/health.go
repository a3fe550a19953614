package idemredis

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// warnEvery is the least time between two warnings that Redis fails
// (Options.Logger).
const warnEvery = time.Minute

// health tells the log when calls start to fail and when they succeed
// again: one line each, not one per call, and not more than one warning
// per warnEvery however often Redis comes and goes.
type health struct {
	log     *slog.Logger
	every   time.Duration // warnEvery
	down    atomic.Bool   // calls fail: the last call that reached Redis or dialled failed
	skipped atomic.Int64  // calls failed at once during a cool-down, while down

	mu       sync.Mutex
	since    time.Time // when the calls started to fail
	calls    int64     // calls that failed since
	warned   bool      // the failure since `since` was logged
	lastWarn time.Time
}

// failed notes a call that failed with err.
func (h *health) failed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if !h.down.Load() {
		h.down.Store(true)
		h.since, h.calls, h.warned = now, 0, false
		h.skipped.Store(0)
	}
	h.calls++
	if h.warned || (!h.lastWarn.IsZero() && now.Sub(h.lastWarn) < h.every) {
		return
	}
	h.warned, h.lastWarn = true, now
	h.log.Warn("idemredis: redis calls fail: the engine serves from PostgreSQL without the cache until they succeed again",
		"error", err, "failing_since", h.since, "failed_calls", h.calls+h.skipped.Load())
}

// recovered notes a call that succeeded while down.
func (h *health) recovered() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down.Load() {
		return
	}
	h.down.Store(false)
	if h.warned {
		h.log.Info("idemredis: redis calls succeed again: the cache is back in use",
			"failing_for", time.Since(h.since).Round(time.Millisecond), "failed_calls", h.calls+h.skipped.Load())
	}
}
