package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/idemgen/idemgen/cmd/idemgen/internal/admindb"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

type statsJSON struct {
	ByOperation       []countJSON `json:"by_operation"`
	ByState           []countJSON `json:"by_state"`
	Records           int64       `json:"records"`
	OldestLive        *time.Time  `json:"oldest_live"`
	OldestLiveSeconds *float64    `json:"oldest_live_seconds"`
	TableBytes        int64       `json:"table_bytes"`
}

type countJSON struct {
	Operation string `json:"operation,omitempty"`
	State     string `json:"state"`
	Records   int64  `json:"records"`
	BodyBytes int64  `json:"body_bytes"`
}

// stats counts records by state and operation: a walk of the table.
func (c *recordsCmd) stats(args []string) error {
	c.flags()
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	return c.run(func(ctx context.Context) error {
		rows, err := c.q.CountByStateAndOperation(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, missingTable(err))
		}
		ts, err := c.q.TableStats(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		out := statsJSON{ByOperation: []countJSON{}, ByState: []countJSON{}, TableBytes: ts.TotalBytes, OldestLive: tsPtr(ts.OldestLive)}
		byState := map[string]*countJSON{}
		var states []string
		for _, r := range rows {
			out.ByOperation = append(out.ByOperation, countJSON{Operation: r.Operation, State: r.State, Records: r.Records, BodyBytes: r.BodyBytes})
			out.Records += r.Records
			s := byState[r.State]
			if s == nil {
				s = &countJSON{State: r.State}
				byState[r.State] = s
				states = append(states, r.State)
			}
			s.Records += r.Records
			s.BodyBytes += r.BodyBytes
		}
		for _, st := range []idem.State{idem.StateInProgress, idem.StateUnknown, idem.StateCompleted,
			idem.StateFailedReplayable, idem.StateFailedRetryable, idem.StateExpired} {
			if s := byState[string(st)]; s != nil {
				out.ByState = append(out.ByState, *s)
			}
		}
		if ts.OldestLive.Valid {
			age := ts.DbNow.Time.Sub(ts.OldestLive.Time).Seconds()
			out.OldestLiveSeconds = &age
		}
		if c.asJSON {
			return c.printJSON(out)
		}
		w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "OPERATION\tSTATE\tRECORDS\tBODY BYTES\t")
		for _, r := range out.ByOperation {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t\n", r.Operation, r.State, r.Records, r.BodyBytes)
		}
		for _, r := range out.ByState {
			fmt.Fprintf(w, "all\t%s\t%d\t%d\t\n", r.State, r.Records, r.BodyBytes)
		}
		w.Flush()
		fmt.Fprintf(c.stdout, "\nrecords: %d; table with indexes: %d bytes\n", out.Records, out.TableBytes)
		if out.OldestLive != nil {
			fmt.Fprintf(c.stdout, "oldest live claim (IN_PROGRESS or UNKNOWN): %s\n", fmtAge(*out.OldestLive, ts.DbNow.Time))
		} else {
			fmt.Fprintln(c.stdout, "no live claims")
		}
		return nil
	})
}

type resealJSON struct {
	Scanned   int      `json:"scanned"`
	Resealed  int      `json:"resealed"`
	Current   int      `json:"current"`
	Plaintext int      `json:"plaintext"`
	Changed   int      `json:"changed_meanwhile"`
	Failed    []string `json:"failed"`
	DryRun    bool     `json:"dry_run"`
	KeyID     string   `json:"current_key"`
}

// reseal re-seals every stored value not sealed with the current key (and,
// with -plaintext, values stored before sealing was on), so retired keys
// can be dropped before the records expire by themselves.
func (c *recordsCmd) reseal(args []string) error {
	fs := c.flags()
	batch := fs.Int("batch", 500, "records per page")
	plaintext := fs.Bool("plaintext", false, "also seal values stored in plaintext")
	dry := fs.Bool("dry-run", false, "count what would change; change nothing")
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	if *batch <= 0 || *batch > 10000 {
		return usageError{msg: fmt.Sprintf("%s: -batch %d: want 1 to 10000", c.name, *batch)}
	}
	s, err := c.sealer()
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("%s: %w", c.name, errNoKeys)
	}
	return c.run(func(ctx context.Context) error {
		cur, err := s.Current(ctx)
		if err != nil {
			return err
		}
		out := resealJSON{DryRun: *dry, KeyID: cur, Failed: []string{}}
		// needs reports whether v must be rewritten.
		needs := func(v []byte) bool {
			if v == nil {
				return false
			}
			if id, ok := idemseal.KeyID(v); ok {
				return id != cur
			}
			return *plaintext
		}
		var after admindb.SealedPageParams
		for {
			after.RowLimit = int32(*batch)
			page, err := c.q.SealedPage(ctx, after)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			for _, r := range page {
				out.Scanned++
				if !needs(r.ResponseBody) && !needs(r.RecoveryData) {
					out.Current++
					continue
				}
				if !idemseal.IsSealed(r.ResponseBody) && r.ResponseBody != nil || !idemseal.IsSealed(r.RecoveryData) && r.RecoveryData != nil {
					out.Plaintext++
				}
				k := keyOf(r.Tenant, r.Operation, r.IdempotencyKey)
				p := admindb.ResealParams{ID: r.ID, State: r.State, Fence: r.Fence, UpdatedAt: r.UpdatedAt,
					ResponseHeaders: r.ResponseHeaders, ResponseBody: r.ResponseBody, RecoveryData: r.RecoveryData}
				if err := reencode(ctx, s, k, int(r.ResponseStatus.Int32), &p, needs); err != nil {
					out.Failed = append(out.Failed, fmt.Sprintf("%s %q (hash %s): %v", r.Operation, r.IdempotencyKey, k.Hash(), err))
					continue
				}
				if *dry {
					out.Resealed++
					continue
				}
				n, err := c.q.Reseal(ctx, p)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				if n == 0 {
					out.Changed++ // written since: the engine sealed it with the current key
				} else {
					out.Resealed++
				}
			}
			if len(page) < *batch {
				break
			}
			last := page[len(page)-1]
			after.AfterID = last.ID
		}
		if c.asJSON {
			if err := c.printJSON(out); err != nil {
				return err
			}
		} else {
			verb := "resealed"
			if *dry {
				verb = "would reseal"
			}
			fmt.Fprintf(c.stdout, "scanned %d records: %s %d with key %s (%d held plaintext); %d already current; %d changed meanwhile\n",
				out.Scanned, verb, out.Resealed, cur, out.Plaintext, out.Current, out.Changed)
			for _, f := range out.Failed {
				fmt.Fprintf(c.stdout, "failed: %s\n", f)
			}
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("%s: %d records could not be opened (a retired key missing from the keys given?)", c.name, len(out.Failed))
		}
		return nil
	})
}

// reencode opens p's values that need it and seals them with the current
// key.
// status is the record's response_status (sealed with the response since
// frame version 2; a record sealed before is resealed in the new frame).
func reencode(ctx context.Context, s *idemseal.Sealer, k idem.Key, status int, p *admindb.ResealParams, needs func([]byte) bool) error {
	if needs(p.ResponseBody) {
		hj, body, err := idem.DecodeResponse(ctx, s, k, status, p.ResponseHeaders, p.ResponseBody)
		if err != nil {
			return err
		}
		if p.ResponseHeaders, p.ResponseBody, err = idem.EncodeResponse(ctx, s, k, status, hj, body); err != nil {
			return err
		}
	}
	if needs(p.RecoveryData) {
		data, err := idem.DecodeRecoveryData(ctx, s, k, p.RecoveryData)
		if err != nil {
			return err
		}
		if p.RecoveryData, err = idem.EncodeRecoveryData(ctx, s, k, data); err != nil {
			return err
		}
	}
	return nil
}
