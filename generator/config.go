package generator

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Config is one generation run, usually read from idemgen.yaml. Relative
// paths in a config file are relative to the file's directory.
type Config struct {
	// Spec is the OpenAPI 3.0 or 3.1 document (YAML or JSON).
	Spec string `yaml:"spec"`
	// Package is the Go package name of the output; default "api".
	Package string `yaml:"package"`
	// Output is the directory the files are written to; default ".".
	Output string `yaml:"output"`
	// Templates is an optional directory of template overrides. Every file in
	// it must have the name of a default template (see templates/README.md).
	Templates string `yaml:"templates"`
	// RequireIdempotent makes an operation-level `x-idempotent: false` on a
	// POST or PATCH an error instead of an opt-out.
	RequireIdempotent bool `yaml:"requireIdempotent"`
	// AllowRemoteRefs lets the loader follow http(s) $refs. Off by default:
	// generation must not depend on the network.
	AllowRemoteRefs bool `yaml:"allowRemoteRefs"`
	// BasePath is prefixed to every route pattern, e.g. "/v1". The spec's
	// servers are not consulted: mount the handler with http.StripPrefix or
	// set this explicitly.
	BasePath string `yaml:"basePath"`
	// Rename sets the Go name of a schema by its spec location, as printed
	// in a clash error: {"#/components/schemas/nullTime": "NullTimeValue"}.
	// Clashing names are errors, never silently suffixed; this resolves them.
	Rename map[string]string `yaml:"rename"`
	// Validation configures the validation of requests.
	Validation ValidationConfig `yaml:"validation"`
	// WebhookSource is the CloudEvents source attribute of the events the
	// generated webhook senders enqueue; default "urn:idemgen:<package>".
	WebhookSource string `yaml:"webhookSource"`
	// Client asks for a typed client as well: `client: true` writes
	// client.gen.go beside the server; a mapping (output, package) gives it
	// a package of its own. See ClientConfig.
	Client ClientConfig `yaml:"client"`

	// SpecData, when set, is used instead of reading Spec from disk; Spec
	// still names the document in messages and in the generated header.
	SpecData []byte `yaml:"-"`
}

// ValidationConfig turns request validation off where a service cannot
// enforce its spec yet. Decoding stays strict (JSON types, duplicate and
// case-variant members, the fingerprint); the schema's constraints below
// a skipped location are not checked.
type ValidationConfig struct {
	// Skip lists operationIds, and spec locations of schemas or properties
	// as JSON pointers ("#/components/schemas/NewPayment/properties/note").
	// An entry that names nothing is an error.
	Skip []string `yaml:"skip"`
}

// LoadConfig reads a YAML config file. Unknown keys are errors. Relative
// paths are resolved against the file's directory.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for _, p := range []*string{&cfg.Spec, &cfg.Output, &cfg.Templates, &cfg.Client.Output} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if cfg.Output == "" {
		cfg.Output = dir
	}
	return cfg, nil
}

func (cfg *Config) normalise() error {
	if cfg.Spec == "" {
		return errors.New("config: spec is required")
	}
	if cfg.Package == "" {
		cfg.Package = "api"
	}
	if !isGoIdent(cfg.Package) {
		return fmt.Errorf("config: package %q is not a Go identifier", cfg.Package)
	}
	if cfg.Output == "" {
		cfg.Output = "."
	}
	if cfg.WebhookSource == "" {
		cfg.WebhookSource = "urn:idemgen:" + cfg.Package
	}
	return cfg.Client.normalise(cfg.Output)
}
