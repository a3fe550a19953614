package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

func (e *Engine) claimParams(rq *request, leaseMs int64) store.ClaimParams {
	pol := &rq.op.Policy
	return store.ClaimParams{
		Tenant:         rq.key.Tenant,
		Operation:      rq.key.Operation,
		IdempotencyKey: rq.key.Value,
		Fingerprint:    rq.fp,
		SchemaVersion:  pol.SchemaVersion,
		LeaseMs:        leaseMs,
		TtlMs:          pol.TTL.Milliseconds(),
		TakeExpired:    pol.OnExpired == ExpiredExecute,
	}
}

// serveLease commits an IN_PROGRESS claim with a lease first, then runs the
// business transaction, which stores the outcome only while the claim's
// fencing token still holds.
func (e *Engine) serveLease(rq *request, h Handler, st recordStore) error {
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
		claim, err := st.claimLease(cctx, e.claimParams(rq, leaseMs))
		done(err)
		if err == nil {
			rq.claimed(claim.Attempts, claim.Fence)
			return e.runLease(rq, claim, start, h, st)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("idem: claim: %w", err)
		}
		rec, found, err := st.read(ctx, rq.key, rq.fp)
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

// runLease runs the handler under a committed claim, made no earlier than
// claimed.
func (e *Engine) runLease(rq *request, claim store.ClaimRow, claimed time.Time, h Handler, st recordStore) error {
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	pol := &rq.op.Policy
	key := rq.key
	key.Since = claim.CreatedAt.Time
	hold := e.maxHold(pol)
	rs := &runState{e: e, key: key, fence: claim.Fence, mode: ModeLease, lease: pol.Lease, renewed: claimed,
		holdUntil: claimed.Add(hold)}
	data, err := DecodeRecoveryData(bk, e.cfg.Sealer, key, claim.RecoveryData)
	if err != nil {
		// The earlier attempt's recovery data is what tells a takeover what
		// happened: without it neither the hook nor the handler may run. The
		// claim is left to lapse; the error (naming the missing key id, say)
		// goes to the log.
		st.release()
		return err
	}
	rs.setRecovery(claim.RecoveryPoint, data)
	// The handler acts outside the database: a client that goes away must
	// not cut it off between an external effect and the record of it (the
	// retry would find the effect ambiguous). Only a lost lease cancels it.
	// Nor may it hold the key for ever: its context ends at the maximum
	// hold, when the renewals stop (see Config.MaxHold).
	hctx, endHold := context.WithDeadlineCause(context.WithValue(ContextWithKey(context.WithoutCancel(ctx), key), runCtx{}, rs),
		rs.holdUntil, ErrHoldExpired)
	defer endHold()
	held := hctx // its Err is set by the deadline only
	x := &execution{rq: rq, mode: ModeLease, claim: claim, st: st}

	if claim.TakenOver {
		if hook := e.cfg.Recover[rq.op.ID]; hook != nil {
			// The hook and its bookkeeping use the pool: hold no connection.
			st.release()
			done, err := e.runRecovery(hctx, bk, x, rs, hook)
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
		e.markRetryable(bk, x)
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
func (e *Engine) maxHold(pol *Policy) time.Duration {
	if pol.MaxHold > 0 {
		return pol.MaxHold
	}
	return max(e.cfg.MaxHold, pol.Lease)
}
