package generator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// orderSpec is a minimal spec; %ROOT% and %OP% are replaced by YAML lines.
const orderSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
%ROOT%
paths:
  /orders:
    post:
      operationId: createOrder
      %OP%
      responses:
        '201': {description: created}
        '409': {description: conflict}
components:
  schemas:
    Order: {type: object, properties: {id: {type: string}}}
`

func orderWith(root, op string) string {
	return strings.NewReplacer("%ROOT%", root, "%OP%", op).Replace(orderSpec)
}

func TestSpecErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		require bool
		want    string
	}{
		{"ttl out of range", orderWith("", "x-idempotent: {ttl: 72h}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.ttl: 72h is outside 2h..24h`},
		{"ttl too short at root", orderWith("x-idempotent: {ttl: 1h}", ""),
			false, `openapi.yaml: line 3: x-idempotent.ttl: 1h is outside 2h..24h`},
		{"unknown field", orderWith("", "x-idempotent: {retries: 3}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.retries: unknown field`},
		{"wrong type", orderWith("", "x-idempotent: {required: 'yes'}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.required: want a boolean, got string "yes"`},
		{"not an object", orderWith("", "x-idempotent: 5"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent: want an object or a boolean, got number 5`},
		{"bad enum", orderWith("", "x-idempotent: {mode: eager}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.mode: "eager" is not one of atomic, lease`},
		{"bad duration", orderWith("", "x-idempotent: {lease: soon}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.lease: "soon" is not a positive duration such as 30s or 24h`},
		{"undeclared replay status", orderWith("", "x-idempotent: {replayStatuses: [402]}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.replayStatuses: 402 is not a response the operation declares`},
		{"2xx replay status", orderWith("", "x-idempotent: {replayStatuses: [201]}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.replayStatuses[0]: 201 is not a 4xx or 5xx status`},
		{"3xx replay status", orderWith("", "x-idempotent: {replayStatuses: [302]}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.replayStatuses[0]: 302 is not a 4xx or 5xx status`},
		{"replay status not a number", orderWith("", "x-idempotent: {replayStatuses: [conflict]}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.replayStatuses[0]: want a status code, got string "conflict"`},
		{"lease not shorter than ttl", orderWith("", "x-idempotent: {mode: lease, lease: 3h, ttl: 2h}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.lease: 3h must be shorter than ttl 2h`},
		{"maxHold under the lease", orderWith("", "x-idempotent: {mode: lease, lease: 1m, maxHold: 30s}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.maxHold: 30s must be at least the lease 1m`},
		{"lease from the root", orderWith("x-idempotent: {mode: lease, lease: 3h}", "x-idempotent: {ttl: 2h}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.lease: 3h must be shorter than ttl 2h (lease is set at the document root)`},
		{"fingerprint pointer", orderWith("", "x-idempotent: {fingerprint: {exclude: [metadata]}}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotent.fingerprint.exclude[0]: JSON pointer "metadata" must start with /`},
		{"opt-out refused", orderWith("", "x-idempotent: false"),
			true, `openapi.yaml: line 8: operation "createOrder": x-idempotent: false is not allowed: the config requires every POST and PATCH to be idempotent`},
		{"root error reported once", orderWith("x-idempotent: {ttl: 1h}", "x-idempotent: {}"),
			false, "openapi.yaml: line 3: x-idempotent.ttl: 1h is outside 2h..24h"},
		{"errors sorted together", orderWith("x-idempotent: {profile: rfc}", "x-idempotent: {ttl: 48h, inFlight: queue}"),
			false, `openapi.yaml: line 3: x-idempotent.profile: "rfc" is not one of default, ietf, stripe` + "\n" +
				`openapi.yaml: line 8: operation "createOrder": x-idempotent.inFlight: "queue" is not one of reject, wait` + "\n" +
				`openapi.yaml: line 8: operation "createOrder": x-idempotent.ttl: 48h is outside 2h..24h`},
		{"a field on a line of its own", orderWith("", "x-idempotent:\n        mode: lease\n        lease: soon"),
			false, `openapi.yaml: line 10: operation "createOrder": x-idempotent.lease: "soon" is not a positive duration such as 30s or 24h`},
		{"misspelt extension on an operation", orderWith("x-idempotent: {}", "x-idempotant: {mode: lease}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-idempotant: not an extension idemgen reads (did you mean x-idempotent?)`},
		{"misspelt extension in another case", orderWith("x-idempotent: {}", "X-Idempotent: {mode: lease}"),
			false, `openapi.yaml: line 8: operation "createOrder": X-Idempotent: not an extension idemgen reads (did you mean x-idempotent?)`},
		{"misspelt extension at the root", orderWith("x-idempotnet: {}", ""),
			false, `openapi.yaml: line 3: x-idempotnet: not an extension idemgen reads (did you mean x-idempotent?)`},
		{"misspelt limits", orderWith("x-idempotent: {}", "x-request-limit: {maxDepth: 4}"),
			false, `openapi.yaml: line 8: operation "createOrder": x-request-limit: not an extension idemgen reads (did you mean x-request-limits?)`},
		{"extension on a path item", strings.Replace(orderWith("", ""), "  /orders:\n", "  /orders:\n    x-idempotent: {}\n", 1),
			false, `openapi.yaml: line 6: path "/orders": x-idempotent: idemgen reads x-idempotent on the operations and at the document root, not on a path item`},
		{"remote ref", strings.Replace(orderWith("", ""), "Order: {type: object, properties: {id: {type: string}}}",
			"Order: {$ref: 'https://example.com/schemas.yaml#/Order'}", 1),
			false, `openapi.yaml: error resolving reference "https://example.com/schemas.yaml#/Order": remote $ref https://example.com/schemas.yaml is not allowed (set allowRemoteRefs: true to follow it)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Spec: "openapi.yaml", SpecData: []byte(tc.spec), Output: t.TempDir(), RequireIdempotent: tc.require}
			_, _, err := Generate(cfg)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.name != "remote ref" && !errors.Is(err, ErrSpec) {
				t.Errorf("error is not ErrSpec: %v", err)
			}
			if got := err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			} else if tc.name == "root error reported once" && got != tc.want {
				t.Errorf("error:\n%s\nwant only:\n%s", got, tc.want)
			}
		})
	}
}

func TestTemplateOverride(t *testing.T) {
	spec := orderWith("x-idempotent: {}", "")
	base := Config{Spec: "openapi.yaml", SpecData: []byte(spec), Output: t.TempDir()}
	files, _, err := Generate(base)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	slot := `{{define "handler/before"}}
	w.Header().Set("X-Op", {{quote .ID}}){{end}}`
	if err := os.WriteFile(filepath.Join(dir, "slots.tmpl"), []byte(slot), 0o644); err != nil {
		t.Fatal(err)
	}
	over := base
	over.Templates = dir
	files2, _, err := Generate(over)
	if err != nil {
		t.Fatal(err)
	}
	server := func(fs []File) string {
		for _, f := range fs {
			if f.Name == "server.gen.go" {
				return string(f.Content)
			}
		}
		t.Fatal("no server.gen.go")
		return ""
	}
	if strings.Contains(server(files), `"X-Op"`) || !strings.Contains(server(files2), `w.Header().Set("X-Op", "createOrder")`) {
		t.Errorf("override did not change the output:\n%s", server(files2))
	}

	// A misspelt name is an error naming the file and the choices.
	if err := os.WriteFile(filepath.Join(dir, "sever.go.tmpl"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = Generate(over)
	want := "templates: " + filepath.Join(dir, "sever.go.tmpl") + " matches no default template (want one of client.go.tmpl, server.go.tmpl, slots.tmpl, webhooks.go.tmpl) (did you mean server.go.tmpl?)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestBrokenTemplateShowsNumberedSource(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "slots.tmpl"), []byte(`{{define "file/after"}}func broken( {{end}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(orderWith("", "")), Output: t.TempDir(), Templates: dir})
	if err == nil || !strings.Contains(err.Error(), "server.gen.go: generated code does not parse") || !strings.Contains(err.Error(), "func broken(") {
		t.Fatalf("error = %v", err)
	}
}

// TestImportNames: imports get unique, valid names when a template first
// prints them (gopkg.in/yaml.v3 is yaml, a second yaml package yaml2), and
// the file compiles.
func TestImportNames(t *testing.T) {
	dir := t.TempDir()
	slot := `{{define "file/after"}}
var _ = {{qual "gopkg.in/yaml.v3"}}.Marshal
var _ = {{qual "github.com/oasdiff/yaml"}}.Marshal
var _ = {{qual "gopkg.in/yaml.v3"}}.Unmarshal
{{end}}`
	if err := os.WriteFile(filepath.Join(dir, "slots.tmpl"), []byte(slot), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(orderWith("x-idempotent: {}", "")), Output: t.TempDir(), Templates: dir})
	if err != nil {
		t.Fatal(err)
	}
	src := allSource(files)
	for _, want := range []string{"\tyaml \"gopkg.in/yaml.v3\"\n", "\tyaml2 \"github.com/oasdiff/yaml\"\n", "var _ = yaml.Marshal\n", "var _ = yaml2.Marshal\n", "var _ = yaml.Unmarshal\n", "\t\"github.com/jackc/pgx/v5\"\n"} {
		if !strings.Contains(src, want) {
			t.Errorf("server.gen.go lacks %q", want)
		}
	}
	if testing.Short() {
		return
	}
	modulePackage(t, "importnames", files)
	moduleResult(t, "importnames")
}
