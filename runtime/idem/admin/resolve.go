package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/sealcodec"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// Settlement is what a resolution makes of a record.
type Settlement string

const (
	// SettleCompleted stores the response given: retries get it, replayed.
	// A 2xx makes the record COMPLETED, a 1xx, 3xx or 4xx FAILED_REPLAYABLE
	// (a 5xx is not an outcome: settle it as retryable).
	SettleCompleted Settlement = "completed"
	// SettleRetryable makes the record FAILED_RETRYABLE: the next retry
	// with the same request runs the handler again.
	SettleRetryable Settlement = "retryable"
	// SettleExpired makes the record EXPIRED, due now: the key starts
	// over, and the sweeper deletes the record after its grace.
	SettleExpired Settlement = "expired"
)

// ResolveRequest asks Resolve to settle one record.
type ResolveRequest struct {
	// Key names the record: tenant, operation and key.
	Key idem.Key
	As  Settlement
	// Status, Header and Body are the response of SettleCompleted (Body
	// may be empty, not nil); the other settlements take none.
	Status int
	Header map[string][]string
	Body   []byte
	// Force settles a claim whose lease is live: its holder, if still
	// running, is fenced out and cannot store its outcome.
	Force bool
	// By and Reason are recorded with the resolution; both are required.
	By, Reason string
}

// Validate reports what is wrong with r (ErrInvalid), before any database
// work.
func (r ResolveRequest) Validate() error {
	switch r.As {
	case SettleCompleted:
		if r.Status < 100 || r.Status > 499 {
			return errorf(ErrInvalid, "settling as completed needs a status between 100 and 499, not %d (a 5xx is not an outcome: settle it as retryable)", r.Status)
		}
		if r.Body == nil {
			return errorf(ErrInvalid, "settling as completed needs the response body")
		}
	case SettleRetryable, SettleExpired:
		if r.Status != 0 || r.Body != nil || len(r.Header) > 0 {
			return errorf(ErrInvalid, "settling as %s takes no response (status, headers, body)", r.As)
		}
	default:
		return errorf(ErrInvalid, "settle as %q: want completed, retryable or expired", r.As)
	}
	if strings.TrimSpace(r.Reason) == "" {
		return errorf(ErrInvalid, "the reason is required: it is recorded with the resolution")
	}
	if strings.TrimSpace(r.By) == "" {
		return errorf(ErrInvalid, "who resolves is required: it is recorded with the resolution")
	}
	return nil
}

// to is the state r settles a record in.
func (r ResolveRequest) to() idem.State {
	switch r.As {
	case SettleCompleted:
		if r.Status >= 200 && r.Status <= 299 {
			return idem.StateCompleted
		}
		return idem.StateFailedReplayable
	case SettleRetryable:
		return idem.StateFailedRetryable
	}
	return idem.StateExpired
}

// Resolved is what Resolve did.
type Resolved struct {
	Record Record // the record as it was read, before
	Resolution
	// Sealed: the response was stored sealed (Config.Sealer).
	Sealed bool
}

// Resolve settles the record r names, if it is UNKNOWN, FAILED_RETRYABLE,
// or IN_PROGRESS with a lapsed lease (a live one with r.Force), and records
// who and why in the same transaction. Otherwise it is ErrRefused, as it is
// when the record changed between the read and the write (a retry took the
// claim, an outcome was stored); ErrNotFound when there is no such record.
func (a *Admin) Resolve(ctx context.Context, r ResolveRequest) (Resolved, error) {
	if err := r.Validate(); err != nil {
		return Resolved{}, err
	}
	k := r.Key
	rec, err := a.FindOne(ctx, k.Tenant, k.Operation, k.Value)
	if err != nil {
		return Resolved{}, err
	}
	switch rec.State {
	case idem.StateUnknown, idem.StateFailedRetryable:
	case idem.StateInProgress:
		if rec.LeaseLive && !r.Force {
			return Resolved{}, errorf(ErrRefused, "%s %q holds a live lease until %s: a request may still be running; wait for it, or force the resolution to fence it out",
				k.Operation, k.Value, rec.LeaseExpiresAt.Format("15:04:05Z"))
		}
	default:
		return Resolved{}, errorf(ErrRefused, "%s %q is %s: only UNKNOWN, IN_PROGRESS and FAILED_RETRYABLE records are resolved by hand",
			k.Operation, k.Value, rec.State)
	}
	to := r.to()
	p := store.ResolveParams{ToState: string(to), FromState: string(rec.State), Fence: rec.Fence,
		Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value}
	out := Resolved{Record: rec, Resolution: Resolution{From: rec.State, To: to, Forced: r.Force && rec.LeaseLive, By: r.By, Reason: r.Reason}}
	if r.As == SettleCompleted {
		header := r.Header
		if header == nil {
			header = map[string][]string{}
		}
		hj, err := json.Marshal(header)
		if err != nil {
			return Resolved{}, errorf(ErrInvalid, "headers: %v", err)
		}
		p.ResponseStatus = pgtype.Int4{Int32: int32(r.Status), Valid: true}
		if p.ResponseHeaders, p.ResponseBody, err = sealcodec.EncodeResponse(ctx, a.cfg.Sealer, sealed(k), r.Status, hj, r.Body); err != nil {
			return Resolved{}, err
		}
		out.ResponseStatus, out.Sealed = r.Status, a.cfg.Sealer != nil
	}

	tx, err := a.db.Begin(ctx)
	if err != nil {
		return Resolved{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	q := a.q.WithTx(tx)
	fence, err := q.Resolve(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return Resolved{}, errorf(ErrRefused, "%s %q changed since it was read (now past state %s, fence %d): look again",
			k.Operation, k.Value, rec.State, rec.Fence)
	}
	if err != nil {
		return Resolved{}, err
	}
	if err := q.RecordResolution(ctx, store.RecordResolutionParams{
		Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value,
		FromState: string(rec.State), ToState: string(to), Fence: fence, ResponseStatus: p.ResponseStatus,
		Forced: out.Forced, ResolvedBy: r.By, Reason: r.Reason,
	}); err != nil {
		return Resolved{}, fmt.Errorf("record the resolution: %w", noSchema(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return Resolved{}, fmt.Errorf("commit: %w", err)
	}
	out.Fence = fence
	return out, nil
}
