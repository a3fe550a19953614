package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// leaseMode commits an IN_PROGRESS claim with a lease first, then runs the
// business transaction, which stores the outcome only while the claim's
// fencing token still holds.
type leaseMode struct{ e *Engine }

// claimsLive: a claim whose lease lapsed, or an UNKNOWN outcome, is taken
// over by a retry of the same request (whose recovery hook decides first).
// waitsInProcess: a lease-mode duplicate reads the claim and is answered
// by it (in flight, or taken over when the lease lapsed); it does not
// wait in this process.
func (leaseMode) waitsInProcess() bool { return false }

// asksCache: always. A lease request reads before it claims unless the
// cache had nothing (its marker placed) or the operation's keys rarely have
// a record (guess.go): then it claims first.
func (leaseMode) asksCache(*request) bool { return true }

func (leaseMode) claimsLive(rec *record) bool {
	return rec.state == StateUnknown || rec.leaseLapsed
}

func (m leaseMode) serve(rq *request, h Handler, st session) error {
	// The replay read answers replays and refusals; a request in flight is
	// decided after the claim, which may wait. With nothing in the cache,
	// or while the operation's keys rarely have a record, the claim comes
	// first and reads only when the key is held: a new key then costs two
	// round trips (the claim, the business transaction) instead of three.
	// Reading first is what a replay needs: a claim that finds the key
	// held still locks its row, and commits a write for it.
	g := &rq.state.guess
	rq.insertFirst = rq.cache.marked() || g.insertFirst()
	if !rq.insertFirst {
		if _, _, answered, err := m.e.preRead(rq.r.Context(), rq, st); answered {
			g.observe(rq.found)
			return err
		}
	}
	err := m.claim(rq, h, st)
	g.observe(rq.found)
	return err
}

// claim claims the key, waiting for a claim in flight when the policy
// says so, and runs the handler under the claim.
func (m leaseMode) claim(rq *request, h Handler, st session) error {
	e := m.e
	ctx := rq.r.Context()
	pol := &rq.op.Policy
	leaseMs := max(pol.Lease.Milliseconds(), 1)
	var deadline time.Time
	if pol.InFlight == InFlightWait {
		deadline = time.Now().Add(pol.Wait)
	}
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		cctx, done := e.obs.enter(ctx, rq, phaseClaim)
		start := time.Now()
		var claim leaseClaim
		err := st.commitAlone(cctx, func(q statements) (err error) {
			claim, err = q.claim(cctx, rq.ref, rq.fp, pol, leaseMs)
			return err
		})
		done(err)
		if err == nil {
			rq.claimed(claim.attempts, claim.fence)
			return m.run(rq, claim, start, h, st)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("idem: claim: %w", err)
		}
		rq.found = true // held, or already answered
		rec, found, err := read(ctx, st, rq.ref, rq.fp)
		if err != nil {
			return fmt.Errorf("idem: read record: %w", err)
		}
		act, aerr := actClaim, error(nil)
		if found {
			act, aerr = e.classify(rq, &rec)
		}
		switch act {
		case actReplay:
			st.release()
			return e.replay(rq, &rec)
		case actError:
			return aerr
		case actClaim:
			if attempt < maxClaimAttempts {
				continue
			}
			aerr = withRetryAfter(ErrInFlight, time.Second)
		}
		// In flight.
		if deadline.IsZero() || time.Now().Add(backoff).After(deadline) {
			return aerr
		}
		// Hold no connection while waiting.
		st.release()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 250*time.Millisecond)
		attempt = 0
	}
}

// run runs the handler under a committed claim, made no earlier than
// claimed.
func (m leaseMode) run(rq *request, claim leaseClaim, claimed time.Time, h Handler, st session) error {
	e := m.e
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	pol := &rq.op.Policy
	key := rq.key
	key.Since = claim.createdAt
	hold := m.maxHold(pol)
	rs := &runState{e: e, key: key, id: rq.ref.id, fence: claim.fence, lease: pol.Lease, renewed: claimed, holdUntil: claimed.Add(hold)}
	data, err := decodeRecoveryData(bk, e.cfg.Sealer, key, claim.data)
	if err != nil {
		// The earlier attempt's recovery data is what tells a takeover what
		// happened: without it neither the hook nor the handler may run. The
		// claim is left to lapse; the error (naming the missing key id, say)
		// goes to the log.
		st.release()
		return err
	}
	rs.setRecovery(claim.point, claim.hasPoint, data)
	// The handler acts outside the database: a client that goes away must
	// not cut it off between an external effect and the record of it (the
	// retry would find the effect ambiguous). Only a lost lease cancels it.
	// Nor may it hold the key for ever: its context ends at the maximum
	// hold, when the renewals stop (see Config.MaxHold).
	hctx, endHold := context.WithDeadlineCause(e.handlerContext(context.WithoutCancel(ctx), key, rs),
		rs.holdUntil, ErrHoldExpired)
	defer endHold()
	held := hctx // its Err is set by the deadline only
	x := &execution{rq: rq, rec: &leaseRun{e: e, st: st, claim: claim, claimed: claimed}, takenOver: claim.takenOver}

	if claim.takenOver {
		if hook := e.cfg.Recover[rq.op.ID]; hook != nil {
			// The hook and its bookkeeping use the pool: hold no connection.
			st.release()
			done, err := m.recoverClaim(hctx, bk, x, claim, rs, hook)
			if done || err != nil {
				return err
			}
		}
	}

	hctx, stop := rs.keepAlive(hctx)
	tx, err := st.begin(hctx)
	if err != nil {
		stop()
		st.release()
		x.rec.retryable(bk, x)
		return fmt.Errorf("idem: begin: %w", err)
	}
	x.tx = tx
	resp, herr := e.runHandler(hctx, rq, h, tx)
	if lost := stop(); lost {
		rollback(bk, tx)
		rq.outcome = Outcome{Result: ResultFailed}
		return withRetryAfter(ErrLeaseLost, time.Second)
	}
	if held.Err() != nil && outcomeOf(rq.op, resp, herr) == outcomeRetryable {
		// Cut off at its maximum hold (or failing past it): what it did
		// outside the database is not known. The claim has lapsed (its
		// renewals stopped at the hold), so the next retry takes it over and
		// the recovery hook decides; marking it FAILED_RETRYABLE would run
		// the handler again blindly.
		rollback(bk, tx)
		rq.outcome = Outcome{Result: ResultFailed, State: StateInProgress}
		cause := herr
		if cause == nil {
			cause = fmt.Errorf("the handler answered %d", resp.Status)
		}
		return withRetryAfter(fmt.Errorf("%w: the attempt ran past its maximum hold of %s: %w", ErrOutcomeUnknown, fmtDuration(hold), cause), time.Second)
	}
	return e.finish(bk, bk, x, resp, herr)
}

// maxHold is how long one attempt of a lease-mode operation under pol may
// hold its claim: the policy's maxHold, else Config.MaxHold, never less than
// the lease.
func (m leaseMode) maxHold(pol *Policy) time.Duration {
	if pol.MaxHold > 0 {
		return pol.MaxHold
	}
	return max(m.e.cfg.MaxHold, pol.Lease)
}

// leaseRun records the outcome of one lease-mode execution under its
// claim's fencing token.
type leaseRun struct {
	e       *Engine
	st      session
	claim   leaseClaim
	claimed time.Time // when the claim was sent (its expires_left_ms is from then)
}

// keep completes the claim: in the business transaction, committing it, or
// on its own for a recovery decision (no transaction). stored is false when
// the claim was taken over (fenced out).
func (l *leaseRun) keep(ctx context.Context, x *execution, state State, body *storedResponse) (bool, error) {
	id, fence := x.rq.ref.id, l.claim.fence
	var completed time.Time
	var err error
	if x.tx == nil {
		completed, err = l.e.q.complete(ctx, id, fence, state, body)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
	} else {
		err = l.st.commitWith(ctx, x.tx, func(q statements) (err error) {
			completed, err = q.completeOrAbort(ctx, id, fence, state, body)
			return err
		})
		if isFencedOut(err) {
			return false, nil
		}
	}
	if err == nil {
		x.rq.kept(state, body, completed, l.claim.left, l.claimed)
	}
	return true, err
}

// isFencedOut reports CompleteOrAbort's error for a claim no longer held.
func isFencedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

// lost: another request took the claim over. This (zombie) attempt must
// not commit its business writes.
func (l *leaseRun) lost(bk context.Context, x *execution) error {
	x.rollback(bk)
	x.rq.outcome = Outcome{Result: ResultFailed}
	return withRetryAfter(ErrLeaseLost, time.Second)
}

// keepFailed leaves the claim to lapse: the handler (or the recovery hook's
// system) may have acted outside the database, so the next retry takes the
// claim over and its recovery hook decides, rather than let it run again
// as if nothing happened.
func (l *leaseRun) keepFailed(context.Context, *execution) State { return StateInProgress }

// release frees the key, if the claim still holds.
func (l *leaseRun) release(bk context.Context, x *execution) {
	if err := l.e.q.releaseClaim(bk, x.rq.ref.id, l.claim.fence); err != nil {
		l.e.reportError(bk, x.rq, fmt.Errorf("idem: release key: %w", err))
	}
}

// retryable marks the claim FAILED_RETRYABLE, if it still holds. When the
// handler ran (x.tx is set), the record says so: the handler may have
// acted outside the database before it failed (charged a card, then lost a
// statement), so the retry's claim is a takeover and the recovery hook
// decides before the handler runs again (see Claim). Only an attempt that
// failed before its handler ran leaves the record to run again as it is
// (unless the claim it failed under was itself a takeover).
func (l *leaseRun) retryable(bk context.Context, x *execution) bool {
	held, err := l.e.q.failRetryable(bk, x.rq.ref.id, l.claim.fence, x.tx != nil)
	if err != nil {
		l.e.reportError(bk, x.rq, fmt.Errorf("idem: record retryable outcome: %w", err))
	}
	return held
}

// adopt: a lease request answers with its own outcome; a duplicate never
// completed the key while this one held the claim.
func (l *leaseRun) adopt(context.Context, *request) bool { return false }
