// Command idemgen generates a typed net/http server from an OpenAPI 3.0 or
// 3.1 document annotated with x-idempotent. Every POST and PATCH handler it
// emits goes through the idempotency engine of
// github.com/idemgen/idemgen/runtime/idem.
//
// Usage:
//
//	idemgen generate [-check] [-client] [-client-output dir] [-config file] [-output dir] [-package name] [-spec file] [-strict] [-templates dir] [-v]
//	idemgen lint [-require] [-v] SPEC
//	idemgen init [-dir dir] [-force] [-module path]
//	idemgen migrations -format goose|migrate|atlas|plain [-check] [-dir dir]
//	idemgen conformance -spec file -url URL [-body [ID=]FILE] [-fixtures file] [-header 'Name: value'] [-json] [-n int] [-operation id] [-param NAME=VALUE] [-tenant-header header] [-tenants list] [-timeout duration]
//	idemgen vet [-json] [-keyed list] [-outbound list] [-tags tags] [packages]
//	idemgen templates eject [-all] DIR [TEMPLATE...]
//	idemgen records get|list|resolve|stats|reseal|conflicts|drain-compensations|prune-conflicts ...   (idemgen records help)
//	idemgen version
//
// Run it with `go tool idemgen` after `go get -tool
// github.com/idemgen/idemgen/cmd/idemgen`, or with `go run
// github.com/idemgen/idemgen/cmd/idemgen`, typically from a go:generate line:
//
//	//go:generate go tool idemgen generate
//
// # generate
//
// Reads idemgen.yaml in the current directory (or -config FILE), or takes
// the spec from -spec and the rest from flags (-client writes the typed
// client beside the server, -client-output DIR as a package of its own;
// flags given with -config override the file). The config file:
//
//	spec: openapi.yaml          # OpenAPI 3.0/3.1, YAML or JSON (required)
//	package: api                # Go package name (default api)
//	output: .                   # output directory (default: the config's directory)
//	templates: templates        # optional template overrides
//	requireIdempotent: false    # make `x-idempotent: false` on POST/PATCH an error
//	allowRemoteRefs: false      # follow http(s) $refs
//	basePath: /v1               # prefix of every route (default: the path of the spec's first server; "" for none)
//	rename:                     # Go names by spec location (see the clash warnings)
//	  "#/components/schemas/nullTime": NullTimeValue
//	  "#/components/schemas/Reactions/properties/+1": ThumbsUp
//	  "#/components/schemas/Order/properties/status": {name: Status, type: OrderState}
//	client: true                # also a typed client, client.gen.go (or output:/package: for its own package)
//
// Relative paths are relative to the config file. A JSON Schema for the
// file is schemas/idemgen.schema.json in the idemgen repository.
//
// It writes types.gen.go, server.gen.go and, for a spec with webhooks,
// webhooks.gen.go, touching only files whose content changed, and removes a
// *.gen.go file it wrote before that is no longer produced (one starting
// with idemgen's header, such as helpers.gen.go of earlier versions; the
// code it held is in runtime/idemimpl now). Warnings (spec problems worked
// around, such as two schemas whose Go names clash: the second is numbered,
// NullTime2, and the warning gives the rename key) go to standard error,
// grouped by kind: a kind with more than a few is a count and three
// examples, and the request and response types numbered because a schema
// has their name (as documented) are one note; -v prints every warning.
// With -strict a warning that a request the spec allows may be refused, or
// that a value or a name is not what the spec says, fails the run. With
// -check nothing is written: when the files on disk differ from what would
// be generated (or one would be removed), the diff is printed and the exit
// status is 1.
//
// # lint
//
// Reports, one per line on standard output:
//
//   - errors: a POST or PATCH that is silently not idempotent (no
//     x-idempotent on it or at the root), an invalid x-idempotent value,
//     anything else generation refuses; with -require also an opt-out;
//   - warnings: problems generation works around (identifier clashes settled
//     with a number) and what kin-openapi's validation of the document finds;
//   - notes: deliberate opt-outs (`x-idempotent: false`).
//
// Exit status 1 when there is an error, 0 otherwise, so it can gate CI.
// -require is for teams that want opt-outs to fail too (as the config's
// requireIdempotent does for generate).
//
// # migrations
//
// `idemgen migrations -format F [-dir migrations/idemgen] [-check]` writes
// the runtime's migrations (what schema.Migrate applies) as files of the
// service's migration tool: goose, migrate (golang-migrate), atlas (with
// atlas.sum) or plain (.up.sql/.down.sql). Each up file also records its
// version where idem.New looks for it. The directory must hold nothing
// else; -check writes nothing and exits 1 when it differs from what this
// version writes. See docs/migrations.md for applying them with a version
// table of their own.
//
// # vet
//
// `idemgen vet [packages]` (default ./...) checks the handlers that
// implement a generated Server or WebhookReceiver (analysis/idemvet): a
// statement through anything but the tx the engine handed them (a pool,
// database/sql, a sqlc Queries built on one), a call out of the process
// in an atomic operation (net/http, gRPC, net/smtp, and what -outbound
// lists), a statement's error handled without a savepoint. Findings are
// printed one a line as file:line:col: message (-json: go vet's JSON);
// exit status 1 when there is one. Run as `go vet
// -vettool=$(which idemgen)`, idemgen is the same analyzer under go vet
// (go vet's -fix applies the suggested fixes). See docs/vet.md.
//
// # templates eject
//
// `idemgen templates eject [-all] DIR [TEMPLATE...]` writes slots.tmpl into
// DIR, where slot definitions go while the built-in templates around them
// keep getting fixes; named templates (or -all) are copied whole, each with
// a header recording the built-in version it copies, and generate warns
// once that version has changed. Nothing is overwritten. See
// docs/templates.md, and templates/README.md for the data the templates
// receive, the func map and the slots.
//
// # records
//
// The on-call tool for idempotency records in DATABASE_URL: inspect a key,
// list stuck claims and UNKNOWN records, resolve them by hand (recorded with
// who and why), count records, re-seal stored responses after a key
// rotation. `idemgen records help` lists the subcommands, flags and exit
// statuses; docs/runbook.md says when to use which.
//
// # version
//
// Prints the version of idemgen, from the Go build information: the
// module version (v0.1.0) when idemgen was built from a downloaded module,
// or "(devel)" with the commit, its time and whether the tree was modified
// when it was built from a checkout (CHANGELOG.md lists the releases).
//
// Messages start with "idemgen: ". Exit status is 1 on failure and 2 on bad
// usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/templates"
)

func main() {
	if vetTool(os.Args[1:]) {
		runVetTool() // go vet -vettool=$(which idemgen)
	}
	if len(os.Args) > 1 && os.Args[1] == "generate" {
		tuneGC()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError makes run exit 2. With fs set, the command's own usage is
// printed after the message instead of the general one.
type usageError struct {
	msg string
	fs  *flag.FlagSet
}

func (e usageError) Error() string { return e.msg }

// helpRequest is -h or -help given to a command: its usage goes to
// standard output, and the exit status is 0.
type helpRequest struct{ fs *flag.FlagSet }

func (helpRequest) Error() string { return "help requested" }
func (helpRequest) Unwrap() error { return flag.ErrHelp }

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	var ue usageError
	var hr helpRequest
	var se *generator.SpecError
	var xe interface{ ExitCode() int }
	switch {
	case err == nil:
		return 0
	case errors.As(err, &hr):
		fmt.Fprint(stdout, commandUsage(hr.fs))
		return 0
	case errors.As(err, &xe):
		fmt.Fprintf(stderr, "idemgen: %v\n", err)
		return xe.ExitCode()
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, usage())
		return 2
	case errors.As(err, &ue) && ue.fs != nil:
		fmt.Fprintf(stderr, "idemgen: %s\n%s", ue.msg, commandUsage(ue.fs))
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "idemgen: %s\n%s", ue.msg, usage())
		return 2
	case errors.Is(err, errSilent):
		return 1
	case errors.As(err, &se):
		for _, p := range se.Problems { // one line each, located
			fmt.Fprintf(stderr, "idemgen: %s\n", p)
		}
		return 1
	default:
		fmt.Fprintf(stderr, "idemgen: %v\n", err)
		return 1
	}
}

var errSilent = errors.New("already reported")

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{msg: "no command"}
	}
	switch args[0] {
	case "generate":
		return generate(args[1:], stdout, stderr)
	case "lint":
		return lint(args[1:], stdout, stderr)
	case "init":
		return initCmd(args[1:], stdout, stderr)
	case "migrations":
		return migrationsCmd(args[1:], stdout, stderr)
	case "records":
		return records(args[1:], stdout, stderr)
	case "conformance":
		return conformanceCmd(args[1:], stdout, stderr)
	case "vet":
		return vetCmd(args[1:], stdout, stderr)
	case "templates":
		if len(args) < 2 || args[1] != "eject" {
			return usageError{msg: "want: templates eject [-all] DIR [TEMPLATE...]"}
		}
		return ejectCmd(args[2:], stderr)
	case "version":
		if len(args) != 1 {
			return usageError{msg: "version takes no arguments"}
		}
		fmt.Fprintln(stdout, "idemgen", version())
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return nil
	}
	return usageError{msg: fmt.Sprintf("unknown command %q", args[0])}
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports flag errors itself, prefixed idemgen:
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpRequest{fs}
		}
		return usageError{err.Error(), fs}
	}
	return nil
}

func generate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", stderr)
	configPath := fs.String("config", "", "config `file` (default idemgen.yaml)")
	spec := fs.String("spec", "", "OpenAPI document `file` (instead of a config file)")
	pkg := fs.String("package", "", "Go package `name` (default api)")
	output := fs.String("output", "", "output `dir`ectory")
	tmpl := fs.String("templates", "", "template overrides `dir`ectory")
	client := fs.Bool("client", false, "also write the typed client, client.gen.go, beside the server")
	clientOutput := fs.String("client-output", "", "write the client as a package of its own in this `dir`ectory (implies -client)")
	check := fs.Bool("check", false, "print a diff and exit 1 when the files on disk are stale; write nothing")
	strict := fs.Bool("strict", false, "fail (exit 1, nothing written) on a warning that a request the spec allows may be refused or a value or name is not what the spec says")
	verbose := fs.Bool("v", false, "print every warning, not a count and a few examples of each kind")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: "generate takes no arguments"}
	}
	var cfg generator.Config
	switch {
	case *spec != "" && *configPath != "":
		return usageError{msg: "-spec and -config are exclusive"}
	case *spec != "":
		cfg.Spec = *spec
	default:
		if *configPath == "" {
			*configPath = "idemgen.yaml"
		}
		var err error
		if cfg, err = generator.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	if *pkg != "" {
		cfg.Package = *pkg
	}
	if *output != "" {
		cfg.Output = *output
	}
	if *tmpl != "" {
		cfg.Templates = *tmpl
	}
	if *client || *clientOutput != "" {
		cfg.Client.Enabled = true
	}
	if *clientOutput != "" {
		cfg.Client.Output = *clientOutput
	}
	if cfg.Output == "" {
		cfg.Output = "."
	}
	cfg.Version = generator.Version()
	files, warnings, err := generator.Generate(cfg)
	for _, line := range generator.WarningLines(warnings, *verbose) {
		fmt.Fprintf(stderr, "idemgen: %s\n", line)
	}
	if err != nil {
		return err
	}
	if n := len(generator.StrictWarnings(warnings)); *strict && n > 0 {
		return fmt.Errorf("-strict: %d warning(s); nothing written", n)
	}
	if *check {
		diff, err := generator.Diff(cfg.Output, files)
		if err != nil {
			return err
		}
		if diff != "" {
			fmt.Fprint(stdout, diff)
			return fmt.Errorf("generated files in %s are stale; run idemgen generate", cfg.Output)
		}
		return nil
	}
	_, err = generator.Write(cfg.Output, files)
	return err
}

// ejectCmd runs `idemgen templates eject [-all] DIR [TEMPLATE...]`: by
// default only slots.tmpl, where slot definitions go while the built-in
// templates around them keep getting fixes; named templates (or -all) are
// copied whole, with a header recording which version they copy.
func ejectCmd(args []string, stderr io.Writer) error {
	flags := newFlags("templates eject", stderr)
	all := flags.Bool("all", false, "copy every built-in template (each then replaces the built-in one)")
	if err := parse(flags, args); err != nil {
		return err
	}
	if flags.NArg() < 1 {
		return usageError{msg: "templates eject: want a directory", fs: flags}
	}
	dir, names := flags.Arg(0), flags.Args()[1:]
	known := map[string]bool{}
	var builtin []string
	for _, tf := range templates.Files {
		known[tf.Template] = true
		builtin = append(builtin, tf.Template)
	}
	switch {
	case *all && len(names) > 0:
		return usageError{msg: "templates eject: -all or template names, not both", fs: flags}
	case *all:
		names = builtin
	case len(names) == 0:
		names = []string{"slots.tmpl"}
	}
	for _, n := range names {
		if !known[n] {
			return usageError{msg: fmt.Sprintf("templates eject: %q is not a built-in template (want one of %s)", n, strings.Join(builtin, ", ")), fs: flags}
		}
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return fmt.Errorf("templates eject: %s already exists; nothing written", filepath.Join(dir, n))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		data, err := fs.ReadFile(templates.FS, n)
		if err != nil {
			return err
		}
		if n != "slots.tmpl" {
			data = append([]byte(templates.EjectHeader(n)), data...)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
