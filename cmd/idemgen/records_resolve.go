package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
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
	tenant := fs.String("tenant", "", "`tenant` of the record")
	op := fs.String("operation", "", "`operationId` (needed when the key names records of several operations)")
	as := fs.String("as", "", "`completed|retryable|expired`: completed (replay the response given), retryable (the next retry runs the handler again) or expired (the key starts over) (required)")
	status := fs.Int("status", 0, "completed: the response's status")
	bodyFile := fs.String("body-file", "", "completed: a `file` holding the response body")
	body := fs.String("body", "", "completed: the response `body`")
	hdr := headerFlags{}
	fs.Var(hdr, "header", "completed: a response header, `'Name: value'` (repeatable)")
	reason := fs.String("reason", "", "`why` (required; recorded)")
	by := fs.String("by", "", "`who` (recorded; default the login name)")
	force := fs.Bool("force", false, "override a live lease: its holder is fenced out and cannot store its outcome")
	if err := c.parse(args, 1, "one KEY"); err != nil {
		return err
	}
	key := normalizeKey(fs.Arg(0))

	req := admin.ResolveRequest{As: admin.Settlement(*as), Force: *force, Reason: *reason, By: *by}
	switch req.As {
	case admin.SettleCompleted:
		if (*bodyFile != "") == flagSet(fs, "body") {
			return usageError{msg: c.name + ": -as completed needs the body: -body-file F or -body S (one of them)"}
		}
		req.Body = []byte(*body)
		if *bodyFile != "" {
			var err error
			if req.Body, err = os.ReadFile(*bodyFile); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		req.Status, req.Header = *status, hdr
	case admin.SettleRetryable, admin.SettleExpired:
		if *status != 0 || *bodyFile != "" || flagSet(fs, "body") || len(hdr) > 0 {
			return usageError{msg: fmt.Sprintf("%s: -as %s takes no response (-status, -body, -body-file, -header)", c.name, *as)}
		}
	default:
		return usageError{msg: fmt.Sprintf("%s: -as %q: want completed, retryable or expired", c.name, *as)}
	}
	if req.By == "" {
		if u, err := user.Current(); err == nil {
			req.By = u.Username
		}
		if req.By == "" {
			return usageError{msg: c.name + ": -by is required (no login name to default to)"}
		}
	}
	if err := req.Validate(); err != nil {
		return c.adminError(err)
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
		req.Key = r.Key
		adm := c.adm
		if req.As == admin.SettleCompleted {
			s, err := c.sealer()
			if err != nil {
				return err
			}
			adm = c.withSealer(s)
		}
		res, err := adm.Resolve(ctx, req)
		if err != nil {
			return c.adminError(err)
		}
		k := res.Record.Key
		out := resolutionJSON{Tenant: k.Tenant, Operation: k.Operation, Key: k.Value, KeyHash: res.Record.KeyHash,
			From: string(res.From), To: string(res.To), Fence: res.Fence, Status: statusPtr(res.ResponseStatus),
			Sealed: res.Sealed, Forced: res.Forced, By: res.By, Reason: res.Reason}
		if c.asJSON {
			return c.printJSON(out)
		}
		fmt.Fprintf(c.stdout, "resolved %s %q (hash %s): %s -> %s, fence %d, by %s: %s\n",
			k.Operation, k.Value, out.KeyHash, out.From, out.To, res.Fence, res.By, res.Reason)
		switch res.To {
		case idem.StateCompleted, idem.StateFailedReplayable:
			fmt.Fprintf(c.stdout, "retries now get the %d response, replayed\n", res.ResponseStatus)
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
