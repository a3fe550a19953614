package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/idemgen/idemgen/conformance"
)

const conformanceUsage = `usage: idemgen conformance -spec openapi.yaml -url http://host:port [flags]

Checks a running service against idemgen's idempotency contract, driven by
the spec: one line per check (PASS, FAIL or SKIP, with the evidence) and a
summary. Exit status 0 only when no check failed.

flags:
`

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func conformanceCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	spec := fs.String("spec", "", "OpenAPI document the service implements (required)")
	url := fs.String("url", "", "base URL of the running service (required)")
	var ops, bodies, params, headers listFlag
	fs.Var(&ops, "operation", "check only this operation id (repeatable)")
	fs.Var(&bodies, "body", "request body: FILE for the one -operation, or ID=FILE (repeatable)")
	fs.Var(&params, "param", "parameter value NAME=VALUE, used before anything derived from the spec (repeatable)")
	fs.Var(&headers, "header", `header "Name: value" sent with every request, e.g. credentials (repeatable)`)
	tenantHeader := fs.String("tenant-header", "", "header that selects the tenant (with -tenants)")
	tenants := fs.String("tenants", "", "two or more tenants, comma-separated, for the tenants check")
	n := fs.Int("n", 10, "identical requests sent at once by the concurrent check")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of each request")
	asJSON := fs.Bool("json", false, "write the report, with every exchange, as JSON")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, conformanceUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return usageError{msg: err.Error()}
	}
	switch {
	case fs.NArg() > 0:
		return usageError{msg: "conformance takes no arguments"}
	case *spec == "":
		return usageError{msg: "conformance: -spec is required"}
	case *url == "":
		return usageError{msg: "conformance: -url is required"}
	case *n < 1:
		return usageError{msg: "conformance: -n must be at least 1"}
	case (*tenantHeader == "") != (*tenants == ""):
		return usageError{msg: "conformance: -tenant-header and -tenants go together"}
	}
	cfg := conformance.Config{Spec: *spec, URL: *url, Operations: ops, Concurrency: *n, Timeout: *timeout,
		TenantHeader: *tenantHeader, Bodies: map[string][]byte{}, Params: map[string]string{}, Header: http.Header{}}
	if *tenants != "" {
		cfg.Tenants = strings.Split(*tenants, ",")
		if len(cfg.Tenants) < 2 {
			return usageError{msg: "conformance: -tenants needs at least two tenants"}
		}
	}
	for _, b := range bodies {
		id, file, ok := strings.Cut(b, "=")
		if !ok {
			if len(ops) != 1 {
				return usageError{msg: fmt.Sprintf("conformance: -body %s: name the operation (-body ID=FILE) or give exactly one -operation", b)}
			}
			id, file = ops[0], b
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("conformance: -body: %w", err)
		}
		cfg.Bodies[id] = data
	}
	for _, p := range params {
		name, val, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return usageError{msg: fmt.Sprintf("conformance: -param %q: want NAME=VALUE", p)}
		}
		cfg.Params[name] = val
	}
	for _, h := range headers {
		name, val, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return usageError{msg: fmt.Sprintf("conformance: -header %q: want \"Name: value\"", h)}
		}
		cfg.Header.Add(strings.TrimSpace(name), strings.TrimSpace(val))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := conformance.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errSilent
	}
	return nil
}
