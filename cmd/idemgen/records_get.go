package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

// recordJSON is a record in `get -json` and `list -json`.
type recordJSON struct {
	Tenant         string     `json:"tenant"`
	Operation      string     `json:"operation"`
	Key            string     `json:"key"`
	KeyHash        string     `json:"key_hash"`
	State          string     `json:"state"`
	Attempts       int32      `json:"attempts"`
	Fence          int64      `json:"fence"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	LeaseLive      bool       `json:"lease_live"`
	Abandoned      bool       `json:"abandoned"`
	TakenOver      *bool      `json:"taken_over,omitempty"`
	CreatedAt      *time.Time `json:"created_at"`
	UpdatedAt      *time.Time `json:"updated_at"`
	CompletedAt    *time.Time `json:"completed_at,omitempty"`
	ExpiresAt      *time.Time `json:"expires_at"`
	Expired        *bool      `json:"expired,omitempty"`
	SchemaVersion  string     `json:"schema_version,omitempty"`
	ResponseStatus *int32     `json:"response_status"`
	BodyBytes      int64      `json:"body_bytes"`
	SealedWith     string     `json:"sealed_with,omitempty"`
	RecoveryPoint  *string    `json:"recovery_point,omitempty"`
	RecoveryBytes  *int64     `json:"recovery_bytes,omitempty"`
	Resolutions    []resJSON  `json:"resolutions,omitempty"`
	Body           *bodyJSON  `json:"body,omitempty"`
}

type resJSON struct {
	From           string     `json:"from"`
	To             string     `json:"to"`
	Fence          int64      `json:"fence"`
	ResponseStatus *int32     `json:"response_status,omitempty"`
	Forced         bool       `json:"forced"`
	By             string     `json:"by"`
	Reason         string     `json:"reason"`
	At             *time.Time `json:"at"`
}

type bodyJSON struct {
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
}

func (c *recordsCmd) get(args []string) error {
	fs := c.flags()
	tenant := fs.String("tenant", "", "`tenant` of the record")
	op := fs.String("operation", "", "`operationId` (needed when the key names records of several operations)")
	showBody := fs.Bool("show-body", false, "print the stored response's headers and body (opened with the sealing keys)")
	if err := c.parse(args, 1, "one KEY"); err != nil {
		return err
	}
	key := normalizeKey(fs.Arg(0))
	c.locate = func(ctx context.Context) error {
		rows, err := c.adm.Find(ctx, *tenant, *op, key)
		if err == nil && len(rows) == 0 {
			return notFound("%s: no record for key %q (tenant %q%s) on any shard", c.name, key, *tenant, opNote(*op))
		}
		return c.adminError(err)
	}
	return c.run(func(ctx context.Context) error {
		rows, err := c.adm.Find(ctx, *tenant, *op, key)
		if err != nil {
			return c.adminError(err)
		}
		if len(rows) == 0 {
			return notFound("%s: no record for key %q (tenant %q%s)", c.name, key, *tenant, opNote(*op))
		}
		var out []recordJSON
		for _, r := range rows {
			rec, err := c.describe(ctx, r, *showBody)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		if c.asJSON {
			return c.printJSON(out)
		}
		for i, rec := range out {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			c.printRecord(rec, rows[i].DBNow)
		}
		return nil
	})
}

// describe turns a record into its JSON form, with its resolutions and,
// with showBody, its stored response.
func (c *recordsCmd) describe(ctx context.Context, r admin.Record, showBody bool) (recordJSON, error) {
	k := r.Key
	rec := recordJSON{
		Tenant: k.Tenant, Operation: k.Operation, Key: k.Value, KeyHash: r.KeyHash,
		State: string(r.State), Attempts: r.Attempts, Fence: r.Fence,
		LeaseExpiresAt: timePtr(r.LeaseExpiresAt), LeaseLive: r.LeaseLive,
		Abandoned: r.Abandoned(),
		TakenOver: &r.TakenOver, CreatedAt: timePtr(r.CreatedAt), UpdatedAt: timePtr(r.UpdatedAt),
		CompletedAt: timePtr(r.CompletedAt), ExpiresAt: timePtr(r.ExpiresAt), Expired: &r.Expired,
		SchemaVersion: r.SchemaVersion, BodyBytes: r.BodyBytes, ResponseStatus: statusPtr(r.ResponseStatus),
	}
	if r.HasRecoveryPoint {
		rec.RecoveryPoint, rec.RecoveryBytes = &r.RecoveryPoint, &r.RecoveryBytes
	}
	res, err := c.adm.Resolutions(ctx, k)
	if err != nil {
		return rec, c.adminError(err)
	}
	for _, x := range res {
		rec.Resolutions = append(rec.Resolutions, resJSON{From: string(x.From), To: string(x.To), Fence: x.Fence,
			ResponseStatus: statusPtr(x.ResponseStatus), Forced: x.Forced, By: x.By, Reason: x.Reason, At: timePtr(x.At)})
	}
	if r.BodyBytes == 0 && !showBody {
		return rec, nil
	}
	st, err := c.adm.StoredResponse(ctx, k)
	if err != nil {
		return rec, c.adminError(err)
	}
	if id, ok := idemseal.KeyID(st.BodyColumn); ok {
		rec.SealedWith = id
	}
	if !showBody || st.BodyColumn == nil {
		return rec, nil
	}
	s, err := c.sealer()
	if err != nil {
		return rec, err
	}
	if s == nil && rec.SealedWith != "" {
		return rec, fmt.Errorf("%s: the response is sealed with key %q; %w", c.name, rec.SealedWith, errNoKeys)
	}
	hj, body, err := c.withSealer(s).Open(ctx, k, st)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", c.name, err)
	}
	b := &bodyJSON{Headers: map[string][]string{}, Body: string(body)}
	if len(hj) > 0 {
		if err := json.Unmarshal(hj, &b.Headers); err != nil {
			return rec, fmt.Errorf("%s: stored headers: %w", c.name, err)
		}
	}
	rec.Body = b
	return rec, nil
}

func (c *recordsCmd) printRecord(r recordJSON, now time.Time) {
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(w, "%s\t%s\n", k, v) }
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return fmtAge(*t, now)
	}
	line("tenant", fmt.Sprintf("%q", r.Tenant))
	line("operation", r.Operation)
	line("key", r.Key)
	line("key hash", r.KeyHash)
	state := r.State
	switch {
	case r.Abandoned:
		state += " (lease lapsed: abandoned; retry the request, or resolve it)"
	case r.State == string(idem.StateInProgress):
		state += " (lease live: a request is running)"
	case r.State == string(idem.StateUnknown):
		state += " (outcome unknown: a retry asks the recovery hook again, or resolve it)"
	}
	line("state", state)
	line("attempts", fmt.Sprint(r.Attempts))
	line("fence", fmt.Sprint(r.Fence))
	line("lease expires", at(r.LeaseExpiresAt))
	if r.TakenOver != nil && *r.TakenOver {
		if r.State == string(idem.StateFailedRetryable) {
			line("taken over", "yes: a handler ran and failed; the next retry asks the recovery hook first")
		} else {
			line("taken over", "yes: the current claim took over an earlier one")
		}
	}
	line("created", at(r.CreatedAt))
	line("updated", at(r.UpdatedAt))
	line("completed", at(r.CompletedAt))
	exp := at(r.ExpiresAt)
	if r.Expired != nil && *r.Expired {
		exp += ", expired"
	}
	line("expires", exp)
	line("schema version", r.SchemaVersion)
	resp := "-"
	if r.ResponseStatus != nil {
		resp = fmt.Sprintf("%d, %d bytes stored", *r.ResponseStatus, r.BodyBytes)
		if r.SealedWith != "" {
			resp += fmt.Sprintf(" (sealed with key %s)", r.SealedWith)
		}
	}
	line("response", resp)
	if r.RecoveryPoint != nil {
		line("recovery point", fmt.Sprintf("%s (%d bytes)", *r.RecoveryPoint, *r.RecoveryBytes))
	}
	for _, x := range r.Resolutions {
		forced := ""
		if x.Forced {
			forced = ", forced"
		}
		line("resolved", fmt.Sprintf("%s by %s: %s -> %s (fence %d%s): %s", at(x.At), x.By, x.From, x.To, x.Fence, forced, x.Reason))
	}
	w.Flush()
	if r.Body != nil {
		fmt.Fprintln(c.stdout, "\nstored response:")
		for name, vals := range r.Body.Headers {
			for _, v := range vals {
				fmt.Fprintf(c.stdout, "%s: %s\n", name, v)
			}
		}
		fmt.Fprintf(c.stdout, "\n%s\n", r.Body.Body)
	}
}

func fmtAge(t, now time.Time) string {
	d := now.Sub(t).Round(time.Second)
	rel := d.String() + " ago"
	if d < 0 {
		rel = "in " + (-d).String()
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
}

func (c *recordsCmd) list(args []string) error {
	fs := c.flags()
	state := fs.String("state", "", "only records in this `state` (IN_PROGRESS, UNKNOWN, COMPLETED, ...)")
	op := fs.String("operation", "", "only records of this `operationId`")
	tenant := fs.String("tenant", "", "only records of this `tenant`")
	olderThan := fs.Duration("older-than", 0, "only records created at least this long ago (e.g. 10m)")
	hash := fs.String("hash", "", "only the record whose key `hash` (from a log line or a span) this is")
	limit := fs.Int("limit", 50, "at most this many records")
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	f := admin.Filter{State: idem.State(strings.ToUpper(*state)), Operation: *op, OlderThan: *olderThan, KeyHash: *hash, Limit: *limit}
	if flagSet(fs, "tenant") {
		f.Tenant = tenant
	}
	if *limit <= 0 || *limit > 100000 {
		return usageError{msg: fmt.Sprintf("%s: -limit %d: want 1 to 100000", c.name, *limit)}
	}
	if *olderThan < 0 {
		return usageError{msg: fmt.Sprintf("%s: -older-than %v is negative", c.name, *olderThan)}
	}
	return c.run(func(ctx context.Context) error {
		rows, err := c.adm.List(ctx, f)
		if err != nil {
			return c.adminError(err)
		}
		out := make([]recordJSON, len(rows))
		for i, r := range rows {
			out[i] = recordJSON{
				Tenant: r.Key.Tenant, Operation: r.Key.Operation, Key: r.Key.Value, KeyHash: r.KeyHash,
				State: string(r.State), Attempts: r.Attempts, Fence: r.Fence,
				LeaseExpiresAt: timePtr(r.LeaseExpiresAt), LeaseLive: r.LeaseLive, Abandoned: r.Abandoned(),
				CreatedAt: timePtr(r.CreatedAt), UpdatedAt: timePtr(r.UpdatedAt), ExpiresAt: timePtr(r.ExpiresAt),
				BodyBytes: r.BodyBytes, ResponseStatus: statusPtr(r.ResponseStatus),
			}
		}
		if c.asJSON {
			if out == nil {
				out = []recordJSON{}
			}
			return c.printJSON(out)
		}
		w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "STATE\tOPERATION\tTENANT\tKEY\tHASH\tATTEMPTS\tFENCE\tAGE\tSTATUS")
		now := time.Now()
		for _, r := range out {
			st := r.State
			if r.Abandoned {
				st += " (abandoned)"
			}
			status := "-"
			if r.ResponseStatus != nil {
				status = fmt.Sprint(*r.ResponseStatus)
			}
			fmt.Fprintf(w, "%s\t%s\t%q\t%s\t%s\t%d\t%d\t%s\t%s\n", st, r.Operation, r.Tenant, r.Key, r.KeyHash,
				r.Attempts, r.Fence, now.Sub(*r.CreatedAt).Round(time.Second), status)
		}
		w.Flush()
		if len(out) == *limit {
			fmt.Fprintf(c.stderr, "idemgen: %s: showing the first %d; -limit shows more\n", c.name, *limit)
		}
		return nil
	})
}
