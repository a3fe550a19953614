package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/conformance"
)

// conformanceDoc is what idemgen conformance -h says after the synopsis.
const conformanceDoc = `Checks a running service against idemgen's idempotency contract, driven by
the spec: one line per check (PASS, FAIL or SKIP, with the evidence) and a
summary. Exit status 0 only when no check failed.

A body given with -body or in a -fixtures file may hold placeholders that
take a new value in every request built (a retry repeats its bytes):
{{uuid}}, {{rand}}, {{seq}} (1, 2, ...) and {{run}} (an id of the run), for
services that refuse a value twice: {"email": "u-{{seq}}-{{run}}@example.com"}.
A -fixtures file gives bodies and parameters per operation id:

	createUser:
	  body: '{"email": "u-{{seq}}-{{run}}@example.com"}'   # or bodyFile: user.json
	  params: {tenant: acme}
`

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func conformanceCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	spec := fs.String("spec", "", "OpenAPI document `file` the service implements (required)")
	url := fs.String("url", "", "base `URL` of the running service (required)")
	var ops, bodies, params, headers listFlag
	fs.Var(&ops, "operation", "check only this operation `id` (repeatable)")
	fs.Var(&bodies, "body", "request body `[ID=]FILE`: the file for the one -operation, or ID=FILE (repeatable)")
	fs.Var(&params, "param", "parameter value `NAME=VALUE`, used before anything derived from the spec (repeatable)")
	fixtures := fs.String("fixtures", "", "YAML `file` of bodies and parameters by operation id (see above)")
	fs.Var(&headers, "header", "header `'Name: value'` sent with every request, e.g. credentials (repeatable)")
	tenantHeader := fs.String("tenant-header", "", "`header` that selects the tenant (with -tenants)")
	tenants := fs.String("tenants", "", "two or more tenants, a comma-separated `list`, for the tenants check")
	n := fs.Int("n", 10, "identical requests sent at once by the concurrent check")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of each request")
	asJSON := fs.Bool("json", false, "write the report, with every exchange, as JSON")
	if err := parse(fs, args); err != nil {
		return err
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
	if *fixtures != "" {
		fx, err := loadFixtures(*fixtures)
		if err != nil {
			return err
		}
		cfg.Fixtures = fx
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

// fixtureFile is one operation's entry of a -fixtures file.
type fixtureFile struct {
	Body     *string           `yaml:"body"`
	BodyFile string            `yaml:"bodyFile"`
	Params   map[string]string `yaml:"params"`
}

// loadFixtures reads a -fixtures file: operation id -> body (or bodyFile,
// relative to the file) and params. Unknown keys are errors.
func loadFixtures(path string) (map[string]conformance.Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: -fixtures: %w", err)
	}
	var file map[string]fixtureFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && err != io.EOF {
		return nil, fmt.Errorf("conformance: -fixtures %s: %w", path, err)
	}
	out := map[string]conformance.Fixture{}
	for id, f := range file {
		fx := conformance.Fixture{Params: f.Params}
		switch {
		case f.Body != nil && f.BodyFile != "":
			return nil, fmt.Errorf("conformance: -fixtures %s: %s: body and bodyFile are exclusive", path, id)
		case f.Body != nil:
			fx.Body = []byte(*f.Body)
		case f.BodyFile != "":
			name := f.BodyFile
			if !filepath.IsAbs(name) {
				name = filepath.Join(filepath.Dir(path), name)
			}
			if fx.Body, err = os.ReadFile(name); err != nil {
				return nil, fmt.Errorf("conformance: -fixtures %s: %s: %w", path, id, err)
			}
		}
		out[id] = fx
	}
	return out, nil
}
