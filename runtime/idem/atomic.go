package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

const maxClaimAttempts = 4

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

// serveAtomic claims the key inside the business transaction. A duplicate
// blocks on the primary key until the first request commits or rolls back,
// bounded by lock_timeout; then it replays, claims, or answers 409.
func (e *Engine) serveAtomic(rq *request, h Handler, st recordStore) error {
	ctx := rq.r.Context()
	pol := &rq.op.Policy
	timeout := e.cfg.LockTimeout
	if pol.InFlight == InFlightWait {
		timeout = pol.Wait
	}
	for attempt := 0; attempt < maxClaimAttempts; attempt++ {
		cctx, done := e.obs.enter(ctx, rq, phaseClaim)
		tx, claim, err := st.claimAtomic(cctx, e.claimParams(rq, 0), e.claimPre(timeout))
		done(err)
		switch {
		case err == nil:
			rq.claimed(claim.Attempts, claim.Fence)
			return e.runAtomic(rq, tx, claim, h, st)
		case errors.Is(err, pgx.ErrNoRows):
			// READ COMMITTED: this statement's snapshot sees the record the
			// claim conflicted with, committed.
			rec, gerr := st.readAbort(ctx, tx, rq.key)
			if errors.Is(gerr, pgx.ErrNoRows) {
				continue // vanished (released) meanwhile: claim again
			}
			if gerr != nil {
				return fmt.Errorf("idem: read record: %w", gerr)
			}
			act, aerr := e.classify(rq, &rec)
			switch act {
			case actReplay:
				return e.replay(rq, &rec)
			case actError, actInFlight:
				return aerr
			}
			// actClaim: it became claimable meanwhile; try again.
		case isLockTimeout(err):
			rollback(ctx, tx)
			return withRetryAfter(ErrInFlight, time.Second)
		default:
			rollback(ctx, tx)
			return fmt.Errorf("idem: claim: %w", err)
		}
	}
	return withRetryAfter(ErrInFlight, time.Second)
}

func (e *Engine) runAtomic(rq *request, tx pgx.Tx, claim store.ClaimRow, h Handler, st recordStore) error {
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	key := rq.key
	key.Since = claim.CreatedAt.Time
	rs := &runState{e: e, key: key, fence: claim.Fence, mode: ModeAtomic}
	rs.setRecovery(claim.RecoveryPoint, claim.RecoveryData)
	hctx := context.WithValue(ContextWithKey(ctx, key), runCtx{}, rs)
	resp, herr := e.runHandler(hctx, rq, h, tx)
	return e.finish(ctx, bk, &execution{rq: rq, mode: ModeAtomic, claim: claim, st: st, tx: tx}, resp, herr)
}
