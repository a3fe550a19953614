package idem

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
)

// Handing an outcome to the duplicates of this process. When many requests
// with one key arrive at once (a client retrying in a storm), one of them —
// the key's leader in this process — goes to the cache and the database;
// the others wait for it here, and when it answers with an outcome
// PostgreSQL committed (its own, or one it replayed), they answer with that
// outcome as a replay, without a cache call or a statement of their own.
// Without this, each duplicate made its own cache call (a storm of 200 was
// 200 Redis round trips at once, enough to push calls past the cache's
// time-out on a busy machine and into PostgreSQL) and, after waiting, its
// own read.
//
// Only committed outcomes are handed over, so nothing here decides an
// execution: a leader that ends without one (a failure that is not kept,
// a conflict, an error) hands nothing, and its waiters go on as if they had
// just arrived, one of them leading next. A waiter waits as long as a
// duplicate in flight would (duplicateWait). If the leader is
// then running the handler after reading that the key has no outcome, the
// request is in flight: ErrInFlight, as a duplicate waiting for a flight
// gets it (serveKey), with no cache call or read. Otherwise (the leader is
// still asking the cache or reading, or inserting first, which it also
// does for a stored key the cache did not hold) the waiter goes on by
// itself, without leading, to PostgreSQL, reading first (its leader asked
// the cache already): a leader that is merely slow never makes a retry of
// a completed request a 409, and the waiters of a slow leader do not storm
// the cache. A mode that does not wait (lease) does not take part.
type handoffs struct {
	mu sync.Mutex
	m  map[flightKey]*handoff
}

// handoff is one leader's request: done, made when the first waiter
// comes (most keys have none), closes when it has answered; out is then
// the committed outcome it answered with, or nil.
// executing is set as the leader's handler starts after a read that found
// no outcome.
type handoff struct {
	done      chan struct{}
	out       *cached
	executing atomic.Bool
}

// join makes the caller the leader of k in this process (lead), or returns
// the leader's handoff to wait on.
func (hs *handoffs) join(k Key) (h *handoff, lead bool) {
	fk := flightKey{k.Tenant, k.Operation, k.Value}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.m[fk]; h != nil {
		if h.done == nil {
			h.done = make(chan struct{})
		}
		return h, false
	}
	if hs.m == nil {
		hs.m = map[flightKey]*handoff{}
	}
	h = &handoff{}
	hs.m[fk] = h
	return h, true
}

// end hands out, the committed outcome the leader of k answered with (nil:
// none), to its waiters; a request arriving afterwards leads anew.
func (hs *handoffs) end(k Key, h *handoff, out *cached) {
	hs.mu.Lock()
	delete(hs.m, flightKey{k.Tenant, k.Operation, k.Value})
	h.out = out
	if h.done != nil {
		close(h.done)
	}
	hs.mu.Unlock()
}

// dupCall is how a request met its duplicates in this process; only
// awaitHandoff writes it.
type dupCall struct {
	// leads is the handoff the request leads, if it does.
	leads *handoff
	// handedOver: the request was answered with its leader's outcome.
	handedOver bool
	// ownWay: it waited for a leader in vain and goes to PostgreSQL by
	// itself, reading first.
	ownWay bool
}

// awaitHandoff waits for the leader of rq's key in this process, if there
// is one, for as long as rq's mode lets a duplicate wait. answered: rq was
// answered with the leader's committed outcome, or its context ended (err).
// Otherwise rq leads its key in this process (rq.dup.leads: it must end
// h with the outcome it answered with), or (h nil) goes on by itself: its
// mode does not wait, or the wait ran out.
func (e *Engine) awaitHandoff(rq *request) (h *handoff, answered bool, err error) {
	if !rq.mode.waitsInProcess() {
		return nil, false, nil
	}
	wait := e.duplicateWait(&rq.op.Policy)
	ctx := rq.r.Context()
	var timer *time.Timer
	for {
		h, lead := e.handoffs.join(rq.key)
		if lead {
			rq.dup.leads = h
			return h, false, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		_, done := e.obs.enter(ctx, rq, phaseClaim)
		select {
		case <-h.done:
			done(nil)
		case <-timer.C:
			if h.executing.Load() {
				err := withRetryAfter(ErrInFlight, time.Second)
				done(err)
				return nil, true, err
			}
			done(nil)
			rq.dup.ownWay = true
			return nil, false, nil
		case <-ctx.Done():
			done(ctx.Err())
			return nil, true, ctx.Err()
		}
		if h.out == nil {
			continue // no outcome committed: lead, or wait for the next leader
		}
		rec := h.out.record(rq.fp)
		switch act, aerr := e.classify(rq, &rec); act {
		case actReplay:
			rq.dup.handedOver = true
			return nil, true, e.replay(rq, &rec)
		case actError:
			return nil, true, aerr
		}
		// Not an outcome this request takes (it cannot be: a committed
		// final outcome of this key is replayed or refused); lead.
	}
}

// record is c as the record classify and replay read, for a request
// with fingerprint fp (the response is left out when fp differs, as
// PostgreSQL's read leaves it out).
func (c *cached) record(fp []byte) record {
	rec := record{
		sameKey: true, state: c.state, sameRequest: bytes.Equal(c.fingerprint, fp),
		schema: c.schema, completedAt: c.completedAt,
		left: (c.left - time.Since(c.leftAt)).Truncate(time.Millisecond),
	}
	if rec.sameRequest {
		rec.status, rec.headers, rec.body = c.status, c.headers, c.body
	}
	return rec
}
