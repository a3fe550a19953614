package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
)

// The region subcommands (docs/runbook.md, "A region outage"): what a
// region's database recorded about keys two regions both hold, and the
// compensations it queued for its own losing executions, which only
// idem.Region's Go API drained and pruned before.

// regionFlags adds -region and -peers, which name the idem.Region of the
// service whose database DATABASE_URL is.
func (c *recordsCmd) regionFlags() (name, peers *string) {
	name = c.fs.String("region", "", "this database's `region` (the service's idem.Region.Name); required")
	peers = c.fs.String("peers", "", "the other regions, a comma-separated `list` (idem.Region.Peers); required")
	return name, peers
}

// region is the idem.Region the flags name.
func (c *recordsCmd) region(name, peers string) (idem.Region, error) {
	if name == "" || peers == "" {
		return idem.Region{}, usageError{msg: c.name + ": want -region NAME -peers NAME[,NAME...] (the service's idem.Region)"}
	}
	return idem.Region{Name: name, Peers: strings.Split(peers, ",")}, nil
}

// conflictJSON is one conflict as -json prints it.
type conflictJSON struct {
	ID            string     `json:"id"`
	Tenant        string     `json:"tenant"`
	Operation     string     `json:"operation"`
	Key           string     `json:"key"`
	Region        string     `json:"region"`
	Peer          string     `json:"peer"`
	State         string     `json:"state"`
	PeerState     string     `json:"peer_state"`
	Winner        string     `json:"winner"`
	Compensation  string     `json:"compensation"`
	DetectedAt    time.Time  `json:"detected_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	CompensatedAt *time.Time `json:"compensated_at"`
}

func conflictOf(rc idem.RegionConflict) conflictJSON { return conflictJSON(rc) }

// conflicts lists the conflicts this region's database recorded, the oldest
// first; -queued only those whose compensation waits.
func (c *recordsCmd) conflicts(args []string) error {
	c.flags()
	name, peers := c.regionFlags()
	queued := c.fs.Bool("queued", false, "only conflicts whose compensation is QUEUED")
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	r, err := c.region(*name, *peers)
	if err != nil {
		return err
	}
	return c.run(func(ctx context.Context) error {
		all, err := r.Conflicts(ctx, c.conn)
		if err != nil {
			return err
		}
		out := []conflictJSON{}
		for _, rc := range all {
			if !*queued || rc.Compensation == "QUEUED" {
				out = append(out, conflictOf(rc))
			}
		}
		if c.asJSON {
			return c.printJSON(out)
		}
		w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "DETECTED\tTENANT\tOPERATION\tKEY\tHERE\tPEER\tWINNER\tCOMPENSATION")
		for _, x := range out {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s:%s\t%s\t%s\n", x.DetectedAt.UTC().Format(time.RFC3339), x.Tenant, x.Operation,
				x.Key, x.State, x.Peer, x.PeerState, x.Winner, x.Compensation)
		}
		w.Flush()
		fmt.Fprintf(c.stdout, "%d conflicts\n", len(out))
		return nil
	})
}

type drainJSON struct {
	Done   int    `json:"done"`
	DryRun bool   `json:"dry_run"`
	Error  string `json:"error,omitempty"`
}

// drainCompensations runs -exec for each QUEUED compensation, the oldest
// first, and marks it DONE when the command exits 0 (idem.Region's
// DrainCompensations). The command gets the conflict as JSON on its
// standard input and in IDEM_CONFLICT_* variables; it undoes or flags the
// losing execution in the service's own systems. A crash between its exit
// and the commit runs it again for the same conflict, so it must be safe to
// repeat (key it by IDEM_CONFLICT_ID and IDEM_CONFLICT_PEER).
func (c *recordsCmd) drainCompensations(args []string) error {
	c.flags()
	name, peers := c.regionFlags()
	command := c.fs.String("exec", "", "the `command` (run by sh -c) that compensates one conflict; required")
	limit := c.fs.Int("limit", 0, "at most this many compensations (0: all)")
	dry := c.fs.Bool("dry-run", false, "list what would be drained; run nothing, change nothing")
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	r, err := c.region(*name, *peers)
	if err != nil {
		return err
	}
	if *command == "" && !*dry {
		return usageError{msg: c.name + ": want -exec COMMAND (or -dry-run): what undoes a losing execution is the service's to say"}
	}
	if *dry {
		return c.conflicts(append([]string{"-queued", "-region", *name, "-peers", *peers}, jsonFlag(c.asJSON)...))
	}
	return c.run(func(ctx context.Context) error {
		n, err := r.DrainCompensations(ctx, c.conn, *limit, func(ctx context.Context, _ pgx.Tx, rc idem.RegionConflict) error {
			return compensate(ctx, *command, rc, c.stderr)
		})
		res := drainJSON{Done: n}
		if err != nil {
			res.Error = err.Error()
		}
		if c.asJSON {
			if perr := c.printJSON(res); perr != nil {
				return perr
			}
		} else {
			fmt.Fprintf(c.stdout, "%d compensations done\n", n)
		}
		return err
	})
}

// compensate runs command for rc.
func compensate(ctx context.Context, command string, rc idem.RegionConflict, stderr io.Writer) error {
	data, err := json.Marshal(conflictOf(rc))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Stdin = bytes.NewReader(data)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Env = append(os.Environ(), "IDEM_CONFLICT_ID="+rc.ID, "IDEM_CONFLICT_PEER="+rc.Peer, "IDEM_CONFLICT_TENANT="+rc.Tenant,
		"IDEM_CONFLICT_OPERATION="+rc.Operation, "IDEM_CONFLICT_KEY="+rc.Key, "IDEM_CONFLICT_REGION="+rc.Region,
		"IDEM_CONFLICT_WINNER="+rc.Winner)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("-exec: %w", err)
	}
	return nil
}

func jsonFlag(on bool) []string {
	if on {
		return []string{"-json"}
	}
	return nil
}

// pruneConflicts deletes the settled conflicts (compensation NONE or DONE)
// unchanged for -older-than (idem.Region's PruneConflicts).
func (c *recordsCmd) pruneConflicts(args []string) error {
	c.flags()
	name, peers := c.regionFlags()
	older := c.fs.Duration("older-than", 0, "delete settled conflicts unchanged for this long (say 720h); required")
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	r, err := c.region(*name, *peers)
	if err != nil {
		return err
	}
	if *older <= 0 {
		return usageError{msg: c.name + ": want -older-than D, a positive duration (queued compensations are never pruned)"}
	}
	return c.run(func(ctx context.Context) error {
		n, err := r.PruneConflicts(ctx, c.conn, *older)
		if err != nil {
			return err
		}
		if c.asJSON {
			return c.printJSON(map[string]int64{"deleted": n})
		}
		fmt.Fprintf(c.stdout, "%d settled conflicts deleted\n", n)
		return nil
	})
}
