package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxClaimAttempts bounds how often one request goes round when the record
// changes under it (released, then taken, then released again, ...).
const maxClaimAttempts = 4

// errLost says an atomic-mode execution lost its key to a concurrent
// duplicate (in another process): its record write failed on the primary
// key, nothing committed, and its transaction waits for rollbackThen.
var errLost = errors.New("idem: another request stored this key first")

// atomicMode writes the record once: the handler runs in the business
// transaction, and its outcome is inserted just before COMMIT, in the same
// round trip. No claim row exists while the handler runs, so:
//
//   - in this process, flights makes duplicates wait for the request that
//     runs;
//   - a duplicate in another process runs its handler too; its INSERT then
//     waits on the primary key for the first transaction to end, fails, and
//     the duplicate rolls back (its writes never commit) and replays what
//     the first stored. What such a handler may do before it loses, and the
//     lock waits it takes part in, are described in docs/design.md.
type atomicMode struct{ e *Engine }

// claimsLive: an atomic request never takes over a live record (a lease
// claim or an UNKNOWN outcome left by the operation's earlier lease mode).
func (atomicMode) claimsLive(*record) bool { return false }

// waitsInProcess: a duplicate waits for the leader of its key as it waits
// for a flight of it (serveKey).
func (atomicMode) waitsInProcess() bool { return true }

// asksCache: only while the operation reads first (guess.go). The cache is
// a read that may answer a replay; while the operation's keys rarely have
// a record, asking it (and caching the outcome after) would cost each
// first execution a round trip and a write for nothing, so the request
// inserts first as without a cache. The replays and duplicates that then
// come send the operation back to reading first, and to the cache.
func (atomicMode) asksCache(rq *request) bool { return !rq.state.guess.insertFirst() }

func (m atomicMode) serve(rq *request, h Handler, st session) error {
	g := &rq.state.guess
	// Nothing cached: a first execution, most likely. Else the guess
	// decides, unless the request waited for a leader in vain.
	rq.insertFirst = rq.cache.marked() || (!rq.dup.ownWay && g.insertFirst())
	err := m.serveKey(rq, h, st)
	g.observe(rq.found || rq.raced)
	return err
}

func (m atomicMode) serveKey(rq *request, h Handler, st session) error {
	e := m.e
	ctx := rq.r.Context()
	pol := &rq.op.Policy
	epoch := e.flights.epoch(rq.key)
	var prev *record
	var inFlight error
	var answered bool
	var err error
	if !rq.insertFirst {
		if prev, inFlight, answered, err = e.preRead(ctx, rq, st); answered {
			return err
		}
		if inFlight != nil {
			return inFlight
		}
	}
	// One execution of a key at a time in this process (see flights). A
	// duplicate waits for the one running, then reads again: without
	// leading, so that all the waiters' reads (replays, mostly) run at once.
	deadline := time.Now().Add(e.duplicateWait(pol))
	for {
		cctx, done := e.obs.enter(ctx, rq, phaseClaim)
		leave, busy := e.flights.tryLead(rq.key)
		if leave == nil {
			st.release() // hold no connection while waiting
			err = e.flights.await(cctx, busy, deadline)
		}
		done(err)
		if err != nil {
			return err
		}
		if leave != nil {
			defer leave()
			if e.flights.epoch(rq.key) == epoch {
				break
			}
		}
		// A flight of this key ended since the read: read again.
		if leave == nil {
			epoch = e.flights.epoch(rq.key)
		}
		if prev, inFlight, answered, err = e.preRead(ctx, rq, st); answered {
			return err
		}
		if inFlight != nil {
			return inFlight
		}
		if leave != nil {
			break
		}
	}
	return m.execute(rq, h, st, prev)
}

// execute runs the handler until its outcome is stored or answered by a
// duplicate's. prev is the record the replay read found, when it may be
// run again (FAILED_RETRYABLE of this payload, or expired under onExpired:
// execute).
func (m atomicMode) execute(rq *request, h Handler, st session, prev *record) error {
	e := m.e
	for attempt := 1; ; attempt++ {
		rec, found, err := m.run(rq, h, st, prev)
		if !errors.Is(err, errLost) {
			return err
		}
		rq.raced = true
		var act action
		var aerr error
		if found {
			act, aerr = e.classify(rq, &rec)
		} else {
			act = actClaim // stored and released again meanwhile
		}
		switch act {
		case actReplay:
			return e.replay(rq, &rec)
		case actClaim:
			if attempt < maxClaimAttempts {
				prev = nil
				if found {
					prev = &rec
				}
				continue
			}
			return withRetryAfter(ErrInFlight, time.Second)
		default:
			return aerr
		}
	}
}

// run runs the handler once and stores its outcome. On errLost it returns
// the record that won.
func (m atomicMode) run(rq *request, h Handler, st session, prev *record) (record, bool, error) {
	e := m.e
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	key := rq.key
	if prev != nil && prev.state == StateFailedRetryable && !prev.expired {
		key.Since = prev.createdAt // a retry of the same execution
	} else {
		key.Since = time.Now().UTC().Truncate(time.Microsecond) // as PostgreSQL stores it
	}
	if prev != nil {
		rq.claimed(prev.attempts+1, prev.fence+1)
	} else {
		rq.claimed(1, 1)
	}
	tx, err := st.begin(ctx)
	if err != nil {
		return record{}, false, fmt.Errorf("idem: begin: %w", err)
	}
	rs := &runState{e: e, key: key}
	hctx := e.handlerContext(ctx, key, rs)
	if rq.dup.leads != nil && !rq.insertFirst {
		// It read that the key has no outcome: its waiters in this process
		// are duplicates in flight.
		rq.dup.leads.executing.Store(true)
	}
	started := time.Now()
	resp, herr := e.runHandler(hctx, rq, h, tx)
	e.hintSlow(ctx, rq, time.Since(started))
	herr = hangUp(ctx, herr, true)
	x := &execution{rq: rq, tx: tx, rec: &atomicRun{e: e, st: st, since: key.Since, prev: prev}}
	err = e.finish(ctx, bk, x, resp, herr)
	if errors.Is(err, errLost) {
		var rec record
		var found bool
		rerr := st.rollbackThen(ctx, tx, func(q statements) (err error) {
			rec, found, err = q.read(ctx, rq.ref, rq.fp)
			return err
		})
		if rerr != nil {
			return rec, false, fmt.Errorf("idem: read record: %w", rerr)
		}
		return rec, found, errLost
	}
	return record{}, false, err
}

// atomicRun records the outcome of one atomic execution.
type atomicRun struct {
	e  *Engine
	st session
	// since is the creation time its record gets (Key.Since); prev the
	// record the replay read found that it may run again, if any.
	since time.Time
	prev  *record
}

// keep inserts the record in the business transaction and commits; when a
// FAILED_RETRYABLE or expired record exists, it replaces it. stored is
// false when a duplicate wrote the key first: nothing committed.
func (a *atomicRun) keep(ctx context.Context, x *execution, state State, body *storedResponse) (bool, error) {
	rq := x.rq
	pol := &rq.op.Policy
	o := &outcomeRow{state: state, fp: rq.fp, schema: pol.SchemaVersion, body: body, since: a.since, ttl: pol.TTL}
	left, sent := pol.TTL, time.Now()
	var completed time.Time
	err := a.st.commitWith(ctx, x.tx, func(q statements) (err error) {
		if a.prev == nil {
			completed, err = q.insertOutcome(ctx, rq.ref, o)
			return err
		}
		completed, left, err = q.replaceOutcome(ctx, rq.ref, o, pol.OnExpired == ExpiredExecute)
		return err
	})
	if lostRace(err) {
		return false, nil
	}
	if err == nil {
		rq.kept(state, body, completed, left, sent)
	}
	return true, err
}

// lostRace reports the error of an atomic outcome's write when another
// request wrote the key first: the primary key was taken (InsertOutcome),
// or the record was no longer replaceable (ReplaceOutcome's 22012).
func lostRace(err error) bool {
	if err == nil {
		return false // without the errors.As below, whose target escapes
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return (pe.Code == "23505" && pe.TableName == "idem_records") || pe.Code == "22012"
}

// lost: the duplicate's record answers (execute reads it after the
// rollback).
func (a *atomicRun) lost(context.Context, *execution) error { return errLost }

// keepFailed: nothing of the execution committed; the key stays bound to
// its payload, and may run again.
func (a *atomicRun) keepFailed(bk context.Context, x *execution) State {
	a.retryable(bk, x)
	return StateFailedRetryable
}

// release: the execution's writes rolled back with its transaction; a
// FAILED_RETRYABLE record of this payload that it ran again goes.
func (a *atomicRun) release(bk context.Context, x *execution) {
	if a.prev == nil || a.prev.state != StateFailedRetryable {
		return
	}
	if err := a.e.q.releaseRetryable(bk, x.rq.ref, x.rq.fp); err != nil {
		a.e.reportError(bk, x.rq, fmt.Errorf("idem: release key: %w", err))
	}
}

// retryable writes the record anew as FAILED_RETRYABLE (nothing of the
// execution committed), unless another request's record stands.
func (a *atomicRun) retryable(bk context.Context, x *execution) bool {
	pol := &x.rq.op.Policy
	stored, err := a.e.q.recordRetryable(bk, x.rq.ref, x.rq.fp, pol.SchemaVersion, pol.TTL)
	if err != nil {
		a.e.reportError(bk, x.rq, fmt.Errorf("idem: record retryable outcome: %w", err))
	}
	return stored
}

// adopt answers a request whose own execution did not keep an outcome with
// the outcome a concurrent duplicate stored, if there is one: the key's
// outcome is the one that committed.
func (a *atomicRun) adopt(bk context.Context, rq *request) bool {
	rec, found, err := a.e.q.read(bk, rq.ref, rq.fp)
	if err != nil || !found {
		return false
	}
	if act, _ := a.e.classify(rq, &rec); act != actReplay {
		return false
	}
	return a.e.replay(rq, &rec) == nil
}
