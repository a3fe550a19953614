package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/cmd/idemgen/internal/admindb"
	"github.com/idemgen/idemgen/runtime/idem"
)

// headerFlags collects repeated -header 'Name: value' flags.
type headerFlags map[string][]string

func (h headerFlags) String() string { return "" }
func (h headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("%q is not 'Name: value'", v)
	}
	name = http.CanonicalHeaderKey(name)
	h[name] = append(h[name], strings.TrimSpace(value))
	return nil
}

type resolutionJSON struct {
	Tenant    string `json:"tenant"`
	Operation string `json:"operation"`
	Key       string `json:"key"`
	KeyHash   string `json:"key_hash"`
	From      string `json:"from"`
	To        string `json:"to"`
	Fence     int64  `json:"fence"`
	Status    *int32 `json:"response_status,omitempty"`
	Sealed    bool   `json:"sealed"`
	Forced    bool   `json:"forced"`
	By        string `json:"by"`
	Reason    string `json:"reason"`
}

// resolve settles an UNKNOWN record, an abandoned (or, with -force, a live)
// claim, or a FAILED_RETRYABLE record by hand, and records who and why.
func (c *recordsCmd) resolve(args []string) error {
	fs := c.flags()
	tenant := fs.String("tenant", "", "tenant of the record")
	op := fs.String("operation", "", "operationId (needed when the key names records of several operations)")
	as := fs.String("as", "", "completed (replay the response given), retryable (the next retry runs the handler again) or expired (the key starts over)")
	status := fs.Int("status", 0, "completed: the response's status")
	bodyFile := fs.String("body-file", "", "completed: a file holding the response body")
	body := fs.String("body", "", "completed: the response body")
	hdr := headerFlags{}
	fs.Var(hdr, "header", "completed: a response header, 'Name: value' (repeatable)")
	reason := fs.String("reason", "", "why (required; recorded)")
	by := fs.String("by", "", "who (recorded; default the login name)")
	force := fs.Bool("force", false, "override a live lease: its holder is fenced out and cannot store its outcome")
	if err := c.parse(args, 1, "one KEY"); err != nil {
		return err
	}
	key := normalizeKey(fs.Arg(0))

	var to idem.State
	var p admindb.ResolveParams
	switch *as {
	case "completed":
		if *status < 100 || *status > 499 {
			return usageError{msg: fmt.Sprintf("%s: -as completed needs -status between 100 and 499 (a 5xx is not an outcome: use -as retryable)", c.name)}
		}
		if (*bodyFile != "") == flagSet(fs, "body") {
			return usageError{msg: c.name + ": -as completed needs the body: -body-file F or -body S (one of them)"}
		}
		b := []byte(*body)
		if *bodyFile != "" {
			var err error
			if b, err = os.ReadFile(*bodyFile); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		to = idem.StateCompleted
		if *status < 200 || *status > 299 {
			to = idem.StateFailedReplayable
		}
		hj, err := json.Marshal(map[string][]string(hdr))
		if err != nil {
			return err
		}
		p.ResponseStatus = pgtype.Int4{Int32: int32(*status), Valid: true}
		p.ResponseHeaders, p.ResponseBody = hj, b
	case "retryable", "expired":
		if *status != 0 || *bodyFile != "" || flagSet(fs, "body") || len(hdr) > 0 {
			return usageError{msg: fmt.Sprintf("%s: -as %s takes no response (-status, -body, -body-file, -header)", c.name, *as)}
		}
		to = idem.StateFailedRetryable
		if *as == "expired" {
			to = idem.StateExpired
		}
	default:
		return usageError{msg: fmt.Sprintf("%s: -as %q: want completed, retryable or expired", c.name, *as)}
	}
	if strings.TrimSpace(*reason) == "" {
		return usageError{msg: c.name + ": -reason is required: it is recorded with the resolution"}
	}
	if *by == "" {
		if u, err := user.Current(); err == nil {
			*by = u.Username
		}
		if *by == "" {
			return usageError{msg: c.name + ": -by is required (no login name to default to)"}
		}
	}

	c.locate = func(ctx context.Context) error {
		_, err := c.findOne(ctx, *tenant, *op, key)
		return err
	}
	return c.run(func(ctx context.Context) error {
		r, err := c.findOne(ctx, *tenant, *op, key)
		if err != nil {
			return err
		}
		from := idem.State(r.State)
		switch from {
		case idem.StateUnknown, idem.StateFailedRetryable:
		case idem.StateInProgress:
			if r.LeaseLive && !*force {
				return refused("%s: %s %q holds a live lease until %s: a request may still be running; wait for it, or give -force to fence it out",
					c.name, r.Operation, key, r.LeaseExpiresAt.Time.UTC().Format("15:04:05Z"))
			}
		default:
			return refused("%s: %s %q is %s: only UNKNOWN, IN_PROGRESS and FAILED_RETRYABLE records are resolved by hand", c.name, r.Operation, key, from)
		}
		k := keyOf(r.Tenant, r.Operation, r.IdempotencyKey)
		sealed := false
		if p.ResponseBody != nil {
			s, err := c.sealer()
			if err != nil {
				return err
			}
			if s != nil {
				if p.ResponseHeaders, p.ResponseBody, err = idem.EncodeResponse(ctx, s, k, int(p.ResponseStatus.Int32), p.ResponseHeaders, p.ResponseBody); err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				sealed = true
			}
		}
		p.ToState, p.FromState, p.Fence = string(to), r.State, r.Fence
		p.Tenant, p.Operation, p.IdempotencyKey = r.Tenant, r.Operation, r.IdempotencyKey
		forced := *force && r.LeaseLive

		tx, err := c.conn.Begin(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
		q := c.q.WithTx(tx)
		fence, err := q.Resolve(ctx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			return refused("%s: %s %q changed since it was read (now past state %s, fence %d): look again with records get", c.name, r.Operation, key, r.State, r.Fence)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if err := q.RecordResolution(ctx, admindb.RecordResolutionParams{
			Tenant: r.Tenant, Operation: r.Operation, IdempotencyKey: r.IdempotencyKey,
			FromState: r.State, ToState: string(to), Fence: fence, ResponseStatus: p.ResponseStatus,
			Forced: forced, ResolvedBy: *by, Reason: *reason,
		}); err != nil {
			return fmt.Errorf("%s: record the resolution: %w", c.name, missingTable(err))
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("%s: commit: %w", c.name, err)
		}
		res := resolutionJSON{Tenant: r.Tenant, Operation: r.Operation, Key: r.IdempotencyKey, KeyHash: k.Hash(),
			From: r.State, To: string(to), Fence: fence, Sealed: sealed, Forced: forced, By: *by, Reason: *reason}
		if p.ResponseStatus.Valid {
			res.Status = &p.ResponseStatus.Int32
		}
		if c.asJSON {
			return c.printJSON(res)
		}
		fmt.Fprintf(c.stdout, "resolved %s %q (hash %s): %s -> %s, fence %d, by %s: %s\n",
			r.Operation, r.IdempotencyKey, res.KeyHash, res.From, res.To, fence, *by, *reason)
		switch to {
		case idem.StateCompleted, idem.StateFailedReplayable:
			fmt.Fprintf(c.stdout, "retries now get the %d response, replayed\n", *status)
		case idem.StateFailedRetryable:
			fmt.Fprintln(c.stdout, "the next retry with the same request runs the handler again")
		case idem.StateExpired:
			fmt.Fprintln(c.stdout, "the key starts over: the next request runs as a new operation (or is refused, with onExpired: reject)")
		}
		return nil
	})
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
