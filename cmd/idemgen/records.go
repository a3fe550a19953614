package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

// `idemgen records`: the on-call tool for idempotency records, against the
// database in DATABASE_URL. See recordsUsage. It reads and changes records
// only through the engine's admin API (runtime/idem/admin): this file and
// the records_*.go beside it are flags, shards and printing.

// recordsDoc is what the usage of idemgen records says after the
// subcommands' synopses.
const recordsDoc = `The database is DATABASE_URL. With shards, DATABASE_URLS names one
database per shard (separated by spaces): list, stats and reseal run on
each in turn, get and resolve on the shard that holds the key. The region
subcommands work on the conflicts a region's database recorded about keys
two regions both hold (docs/scaling.md, "Regions"): drain-compensations
runs CMD (sh -c) once per QUEUED compensation, the conflict as JSON on its
standard input and in IDEM_CONFLICT_* variables, and marks it DONE when CMD
exits 0; CMD must be safe to run twice for one conflict.

Sealed values are opened (and sealed) with the keys in IDEM_SEAL_KEYS, or in the file IDEM_SEAL_KEYS_FILE or -keys-file
(ID:BASE64, the current key first; see runtime/idemseal).

Exit status: 0 done; 1 failed (database, keys); 2 bad usage;
3 no such record; 4 refused: the record is not in a state the command
changes, holds a live lease (use -force), or changed meanwhile.
`

// recordsSubcommands are the records subcommands, in the order the usage
// lists them.
var recordsSubcommands = []struct {
	name string
	run  func(*recordsCmd, []string) error
}{
	{"get", (*recordsCmd).get}, {"list", (*recordsCmd).list}, {"resolve", (*recordsCmd).resolve},
	{"stats", (*recordsCmd).stats}, {"reseal", (*recordsCmd).reseal}, {"conflicts", (*recordsCmd).conflicts},
	{"drain-compensations", (*recordsCmd).drainCompensations}, {"prune-conflicts", (*recordsCmd).pruneConflicts},
}

func recordsNames() []string {
	names := make([]string, len(recordsSubcommands))
	for i, sc := range recordsSubcommands {
		names[i] = sc.name
	}
	return names
}

// recordsUsage is the usage of idemgen records: every subcommand's
// synopsis, generated from its flag set, and recordsDoc.
func recordsUsage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, name := range recordsNames() {
		b.WriteString("\t" + synopsis(commandFlags("records "+name)) + "\n")
	}
	return b.String() + "\n" + recordsDoc
}

// Exit statuses beyond 0, 1 and 2, for scripts.
const (
	exitNotFound = 3
	exitRefused  = 4
)

// exitError ends run with a status of its own.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

func notFound(format string, args ...any) error {
	return &exitError{exitNotFound, fmt.Errorf(format, args...)}
}

func refused(format string, args ...any) error {
	return &exitError{exitRefused, fmt.Errorf(format, args...)}
}

func records(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{msg: "records: want a subcommand\n" + recordsUsage()}
	}
	var f func(*recordsCmd, []string) error
	for _, sc := range recordsSubcommands {
		if sc.name == args[0] {
			f = sc.run
		}
	}
	if f == nil {
		if args[0] == "help" || args[0] == "-h" || args[0] == "-help" {
			fmt.Fprint(stdout, recordsUsage())
			return nil
		}
		return usageError{msg: fmt.Sprintf("records: unknown subcommand %q\n%s", args[0], recordsUsage())}
	}
	c := &recordsCmd{name: "records " + args[0], stdout: stdout, stderr: stderr}
	return f(c, args[1:])
}

// recordsCmd is one run of a records subcommand.
type recordsCmd struct {
	name           string
	stdout, stderr io.Writer
	fs             *flag.FlagSet
	asJSON         bool
	keysFile       string
	conn           *pgx.Conn
	adm            *admin.Admin // of conn, without a Sealer (see withSealer)
	// locate, when set, reports whether the connected database holds the
	// record the command names (an exitNotFound error when not): with
	// several databases, the command runs on the one that does.
	locate func(ctx context.Context) error
}

// flags starts the subcommand's flag set with the flags all share.
func (c *recordsCmd) flags() *flag.FlagSet {
	c.fs = newFlags(c.name, c.stderr)
	c.fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	c.fs.StringVar(&c.keysFile, "keys-file", os.Getenv("IDEM_SEAL_KEYS_FILE"), "`file` of the sealing keys (default $IDEM_SEAL_KEYS)")
	return c.fs
}

func (c *recordsCmd) parse(args []string, nargs int, what string) error {
	if err := parse(c.fs, args); err != nil {
		return err // -h: run prints this subcommand's usage and flags, exit 0
	}
	if c.fs.NArg() != nargs {
		if nargs == 0 {
			return usageError{msg: c.name + " takes no arguments"}
		}
		return usageError{msg: fmt.Sprintf("%s takes %s", c.name, what)}
	}
	return nil
}

// databases returns the connection strings the command works on:
// DATABASE_URLS (one database per shard, separated by spaces or newlines)
// when it is set, else DATABASE_URL.
func (c *recordsCmd) databases() ([]string, error) {
	if urls := strings.Fields(os.Getenv("DATABASE_URLS")); len(urls) > 0 {
		return urls, nil
	}
	if os.Getenv("DATABASE_URLS") != "" {
		return nil, usageError{msg: c.name + ": DATABASE_URLS names no database"}
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return nil, usageError{msg: c.name + ": DATABASE_URL is not set (or DATABASE_URLS, one database per shard)"}
	}
	return []string{url}, nil
}

// connect opens url; the caller closes c.conn.
func (c *recordsCmd) connect(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("%s: connect to %s: %w", c.name, dbName(url), err)
	}
	c.conn, c.adm = conn, admin.New(conn, admin.Config{})
	return nil
}

// dbName names a database by host, port and name, without credentials.
func dbName(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "the database"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// run connects and runs f with a context that Ctrl-C cancels.
//
// With several databases (DATABASE_URLS: shards), f runs on each in turn,
// its text output headed by a "# shard N of M: host:port/db" line (with
// -json, one document per shard). A record lives on one shard: when the
// command names one (c.locate is set: get, resolve), the shards that do not
// hold it are passed over, and a key held by several is refused.
func (c *recordsCmd) run(f func(ctx context.Context) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	urls, err := c.databases()
	if err != nil {
		return err
	}
	on := func(url string, f func(ctx context.Context) error) error {
		if err := c.connect(ctx, url); err != nil {
			return err
		}
		defer c.conn.Close(context.WithoutCancel(ctx))
		return f(ctx)
	}
	if len(urls) == 1 {
		return on(urls[0], f)
	}
	if c.locate != nil {
		var holders []string
		var missing error
		for _, url := range urls {
			err := on(url, c.locate)
			var xe *exitError
			switch {
			case errors.As(err, &xe) && xe.code == exitNotFound:
				missing = err
			case err != nil:
				return err
			default:
				holders = append(holders, url)
			}
		}
		switch len(holders) {
		case 0:
			return missing
		case 1:
			return on(holders[0], f)
		}
		names := make([]string, len(holders))
		for i, u := range holders {
			names[i] = dbName(u)
		}
		return refused("%s: the record is on %d shards (%s): a key lives on one; resolve it with DATABASE_URL set to the right one",
			c.name, len(holders), strings.Join(names, ", "))
	}
	for i, url := range urls {
		if !c.asJSON {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			fmt.Fprintf(c.stdout, "# shard %d of %d: %s\n", i+1, len(urls), dbName(url))
		}
		if err := on(url, f); err != nil {
			return err
		}
	}
	return nil
}

// sealer returns the sealer of the configured keys, or nil (and no error)
// when none are configured.
func (c *recordsCmd) sealer() (*idemseal.Sealer, error) {
	var ring *idemseal.Ring
	var err error
	switch {
	case c.keysFile != "":
		ring, err = idemseal.RingFromFile(c.keysFile)
	default:
		var ok bool
		ring, ok, err = idemseal.RingFromEnv("IDEM_SEAL_KEYS")
		if err == nil && !ok {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return idemseal.New(ring), nil
}

func (c *recordsCmd) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// normalizeKey lower-cases a UUID key, as the engine stores it.
func normalizeKey(k string) string {
	if len(k) == 36 {
		if _, err := uuid.Parse(k); err == nil {
			return strings.ToLower(k)
		}
	}
	return k
}

// timePtr is t for JSON: nil when zero.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// statusPtr is a response status for JSON: nil when 0 (none).
func statusPtr(s int) *int32 {
	if s == 0 {
		return nil
	}
	v := int32(s)
	return &v
}

// withSealer is the admin API of the connected database with s opening and
// sealing stored values.
func (c *recordsCmd) withSealer(s *idemseal.Sealer) *admin.Admin {
	if s == nil {
		return c.adm
	}
	return admin.New(c.conn, admin.Config{Sealer: s})
}

// findOne returns the one record KEY names (in -tenant, -operation).
func (c *recordsCmd) findOne(ctx context.Context, tenant, op, key string) (admin.Record, error) {
	r, err := c.adm.FindOne(ctx, tenant, op, key)
	return r, c.adminError(err)
}

// adminError words an error of the admin API for the command, with the exit
// status of its kind.
func (c *recordsCmd) adminError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, admin.ErrNotFound):
		return notFound("%s: %v", c.name, err)
	case errors.Is(err, admin.ErrRefused):
		return refused("%s: %v", c.name, err)
	case errors.Is(err, admin.ErrInvalid):
		return usageError{msg: fmt.Sprintf("%s: %v", c.name, err)}
	}
	return fmt.Errorf("%s: %w", c.name, err)
}

func opNote(op string) string {
	if op == "" {
		return ""
	}
	return ", operation " + op
}

var errNoKeys = errors.New("sealed values need keys: set IDEM_SEAL_KEYS or IDEM_SEAL_KEYS_FILE, or give -keys-file")

// keyOf is the idem.Key of a record row.
func keyOf(tenant, op, key string) idem.Key {
	return idem.Key{Tenant: tenant, Operation: op, Value: key}
}
