package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
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
		ts, err := c.adm.Stats(ctx)
		if err != nil {
			return c.adminError(err)
		}
		out := statsJSON{ByOperation: []countJSON{}, ByState: []countJSON{}, TableBytes: ts.TableBytes, OldestLive: timePtr(ts.OldestLive)}
		byState := map[string]*countJSON{}
		for _, r := range ts.Counts {
			out.ByOperation = append(out.ByOperation, countJSON{Operation: r.Operation, State: string(r.State), Records: r.Records, BodyBytes: r.BodyBytes})
			out.Records += r.Records
			s := byState[string(r.State)]
			if s == nil {
				s = &countJSON{State: string(r.State)}
				byState[string(r.State)] = s
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
		if !ts.OldestLive.IsZero() {
			age := ts.DBNow.Sub(ts.OldestLive).Seconds()
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
			fmt.Fprintf(c.stdout, "oldest live claim (IN_PROGRESS or UNKNOWN): %s\n", fmtAge(*out.OldestLive, ts.DBNow))
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
		// needs reports whether v must be rewritten.
		needs := func(v []byte) bool {
			if id, ok := idemseal.KeyID(v); ok {
				return id != cur
			}
			return *plaintext
		}
		res, err := c.withSealer(s).Reseal(ctx, admin.ResealOptions{Needs: needs, Batch: *batch, DryRun: *dry})
		if err != nil {
			return c.adminError(err)
		}
		out := resealJSON{Scanned: res.Scanned, Resealed: res.Resealed, Current: res.Current, Plaintext: res.Plaintext,
			Changed: res.Changed, Failed: res.Failed, DryRun: *dry, KeyID: cur}
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
