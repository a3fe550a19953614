package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// maxClaimAttempts bounds how often one request goes round when the record
// changes under it (released, then taken, then released again, ...).
const maxClaimAttempts = 4

// errLost says an atomic-mode execution lost its key to a concurrent
// duplicate (in another process): its record write failed on the primary
// key, nothing committed, and its transaction waits for readAbort.
var errLost = errors.New("idem: another request stored this key first")

// Atomic mode writes the record once: the handler runs in the business
// transaction, and its outcome is inserted just before COMMIT, in the same
// round trip. No claim row exists while the handler runs, so:
//
//   - in this process, flights makes duplicates wait for the request that
//     runs (serveKeyed);
//   - a duplicate in another process runs its handler too; its INSERT then
//     waits on the primary key for the first transaction to end, fails, and
//     the duplicate rolls back (its writes never commit) and replays what
//     the first stored. What such a handler may do before it loses, and the
//     lock waits it takes part in, are described in docs/design.md.
//
// prev is the record the replay read found, when it may be run again
// (FAILED_RETRYABLE of this payload, or expired under onExpired: execute).
func (e *Engine) serveAtomic(rq *request, h Handler, st recordStore, prev *store.GetRecordRow) error {
	for attempt := 1; ; attempt++ {
		rec, found, err := e.runAtomic(rq, h, st, prev)
		if !errors.Is(err, errLost) {
			return err
		}
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

// runAtomic runs the handler once and stores its outcome. On errLost it
// returns the record that won.
func (e *Engine) runAtomic(rq *request, h Handler, st recordStore, prev *store.GetRecordRow) (store.GetRecordRow, bool, error) {
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	key := rq.key
	if prev != nil && State(prev.State) == StateFailedRetryable && !prev.Expired {
		key.Since = prev.CreatedAt.Time // a retry of the same execution
	} else {
		key.Since = time.Now().UTC().Truncate(time.Microsecond) // as PostgreSQL stores it
	}
	if prev != nil {
		rq.claimed(prev.Attempts+1, prev.Fence+1)
	} else {
		rq.claimed(1, 1)
	}
	tx, err := st.begin(ctx)
	if err != nil {
		return store.GetRecordRow{}, false, fmt.Errorf("idem: begin: %w", err)
	}
	rs := &runState{e: e, key: key, mode: ModeAtomic}
	hctx := context.WithValue(ContextWithKey(ctx, key), runCtx{}, rs)
	resp, herr := e.runHandler(hctx, rq, h, tx)
	x := &execution{rq: rq, mode: ModeAtomic, st: st, tx: tx, since: key.Since, prev: prev}
	err = e.finish(ctx, bk, x, resp, herr)
	if errors.Is(err, errLost) {
		rec, found, rerr := st.readAbort(ctx, tx, rq.key, rq.fp)
		if rerr != nil {
			return rec, false, fmt.Errorf("idem: read record: %w", rerr)
		}
		return rec, found, errLost
	}
	return store.GetRecordRow{}, false, err
}
