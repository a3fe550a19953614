package admin

import (
	"context"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/sealcodec"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// ResealOptions configures Reseal.
type ResealOptions struct {
	// Needs reports whether a stored value (sealed or plaintext) must be
	// rewritten: with runtime/idemseal, one sealed with another key than
	// the current one, and, to seal them too, plaintext values.
	Needs func(value []byte) bool
	// Batch is the records read per page (0: 500).
	Batch int
	// DryRun counts what would be rewritten and writes nothing.
	DryRun bool
}

// ResealResult counts what Reseal did.
type ResealResult struct {
	Scanned  int // records holding a stored response or recovery data
	Resealed int // rewritten (with DryRun: would be)
	Current  int // needed nothing
	// Plaintext counts records rewritten that held a plaintext value.
	Plaintext int
	// Changed counts records written by the engine since they were read
	// (sealed by it with the current key): left as they are.
	Changed int
	// Failed names the records whose values did not open (a retired key
	// missing from the Sealer's?), with the error.
	Failed []string
}

// Reseal opens every stored value that o.Needs and seals it again with
// Config.Sealer, a page of records at a time in primary-key order. A record
// is rewritten only if it did not change since it was read (state, fence
// and update time), so a claim or an outcome stored meanwhile is never
// overwritten. A record that does not open is counted in Failed and left
// alone; the walk goes on.
func (a *Admin) Reseal(ctx context.Context, o ResealOptions) (ResealResult, error) {
	s := a.cfg.Sealer
	if s == nil {
		return ResealResult{}, errorf(ErrInvalid, "resealing needs a Sealer")
	}
	if o.Needs == nil {
		return ResealResult{}, errorf(ErrInvalid, "resealing needs ResealOptions.Needs")
	}
	if o.Batch == 0 {
		o.Batch = 500
	}
	if o.Batch < 0 || o.Batch > 10000 {
		return ResealResult{}, errorf(ErrInvalid, "batch %d: want 1 to 10000", o.Batch)
	}
	needs := func(v []byte) bool { return v != nil && o.Needs(v) }
	out := ResealResult{Failed: []string{}}
	var page store.SealedPageParams
	for {
		page.RowLimit = int32(o.Batch)
		rows, err := a.q.SealedPage(ctx, page)
		if err != nil {
			return out, noSchema(err)
		}
		for _, r := range rows {
			out.Scanned++
			if !needs(r.ResponseBody) && !needs(r.RecoveryData) {
				out.Current++
				continue
			}
			if r.ResponseBody != nil && !s.IsSealed(r.ResponseBody) || r.RecoveryData != nil && !s.IsSealed(r.RecoveryData) {
				out.Plaintext++
			}
			k := keyOf(r.Tenant, r.Operation, r.IdempotencyKey)
			p := store.ResealParams{ID: r.ID, State: r.State, Fence: r.Fence, UpdatedAt: r.UpdatedAt,
				ResponseHeaders: r.ResponseHeaders, ResponseBody: r.ResponseBody, RecoveryData: r.RecoveryData}
			if err := reencode(ctx, s, k, status(r.ResponseStatus), &p, needs); err != nil {
				out.Failed = append(out.Failed, fmt.Sprintf("%s %q (hash %s): %v", r.Operation, r.IdempotencyKey, k.Hash(), err))
				continue
			}
			if o.DryRun {
				out.Resealed++
				continue
			}
			n, err := a.q.Reseal(ctx, p)
			if err != nil {
				return out, err
			}
			if n == 0 {
				out.Changed++ // written since: the engine sealed it with the current key
			} else {
				out.Resealed++
			}
		}
		if len(rows) < o.Batch {
			return out, nil
		}
		page.AfterID = rows[len(rows)-1].ID
	}
}

// reencode opens p's values that need it and seals them again. status is
// the record's response_status (sealed with the response since frame
// version 2; a record sealed before is resealed in the new frame).
func reencode(ctx context.Context, s idem.Sealer, k idem.Key, status int, p *store.ResealParams, needs func([]byte) bool) error {
	rec := sealed(k)
	if needs(p.ResponseBody) {
		hj, body, err := sealcodec.DecodeResponse(ctx, s, rec, status, p.ResponseHeaders, p.ResponseBody)
		if err != nil {
			return err
		}
		if p.ResponseHeaders, p.ResponseBody, err = sealcodec.EncodeResponse(ctx, s, rec, status, hj, body); err != nil {
			return err
		}
	}
	if needs(p.RecoveryData) {
		data, err := sealcodec.DecodeRecoveryData(ctx, s, rec, p.RecoveryData)
		if err != nil {
			return err
		}
		if p.RecoveryData, err = sealcodec.EncodeRecoveryData(ctx, s, rec, data); err != nil {
			return err
		}
	}
	return nil
}
