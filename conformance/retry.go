package conformance

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

// Retries of answers the contract says to retry.
const (
	// maxAttempts bounds how many times one request is sent.
	maxAttempts = 20
	// maxRetryWait caps the Retry-After honoured between two attempts
	// (the engine's longest is an unknown outcome's 5 s).
	maxRetryWait = 5 * time.Second
	// minRetryWait is the shortest wait, for a Retry-After of 0.
	minRetryWait = 50 * time.Millisecond
	// Without Retry-After the wait is firstBackoff, doubling per attempt
	// up to maxBackoff.
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// sendRetried sends q as a client keeping the contract does: again, with
// the same key and body, while the answer is one to retry (retryable), at
// most maxAttempts times in all and for at most Config.Settle after the
// first such answer, waiting its Retry-After (at most maxRetryWait) or a
// backoff. The last answer is returned with the earlier ones in Earlier.
// A request without a key is sent once: sending it again could run it twice.
func (r *runner) sendRetried(ctx context.Context, keyHeader string, profile idem.Profile, q request) *Exchange {
	var earlier []Exchange
	var deadline time.Time
	for n := 1; ; n++ {
		e := r.send(ctx, keyHeader, q)
		e.profile = profile
		e.Earlier = earlier
		if len(q.keys) == 0 || !e.retryable() || n == maxAttempts || ctx.Err() != nil {
			return e
		}
		wait, ok := e.retryAfter()
		if ok {
			wait = min(max(wait, minRetryWait), maxRetryWait)
		} else {
			wait = min(firstBackoff<<(n-1), maxBackoff)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(r.cfg.Settle)
		}
		if time.Now().Add(wait).After(deadline) {
			return e
		}
		select {
		case <-ctx.Done():
			return e
		case <-time.After(wait):
		}
		last := *e
		last.Earlier = nil
		earlier = append(earlier[:len(earlier):len(earlier)], last)
	}
}

// retryable reports whether e is an answer the contract says to retry
// with the same key, as idemclient decides it (idemclient.IsRetryable):
// no response, 409 in flight or lease lost (in e's profile), 408, 429,
// and a 5xx other than 501 and 505 (an unknown outcome, a database down).
func (e *Exchange) retryable() bool {
	if e.Status == 0 {
		return true
	}
	ce := &idemclient.Error{Status: e.Status, Header: e.resp}
	if p, ok := e.refusal(); ok {
		ce.Problem = &idemclient.Problem{Status: p.Status, Code: p.Code, Reason: p.Reason}
	}
	return idemclient.IsRetryable(ce)
}

// attempts is how many times e's request was sent.
func (e *Exchange) attempts() int {
	if e == nil {
		return 0
	}
	return len(e.Earlier) + 1
}
