package generator

import (
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/generator/internal/load"
	"github.com/idemgen/idemgen/generator/internal/suggest"
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
	// BasePath is prefixed to every route pattern, e.g. "/v1". Unset (nil),
	// it is the path of the spec's first server (https://api.example.com/v1
	// gives /v1, with server variables at their defaults), with a warning when
	// the servers' paths differ; "" or "/" sets no prefix. The generated
	// handler's WithBasePath replaces it at run time.
	BasePath *string `yaml:"basePath"`
	// Rename sets Go names by spec location, as printed in idemgen's clash
	// warnings: "#/components/schemas/nullTime": NullTimeValue. Without it a
	// clash is settled by a number (NullTime2) and a warning. See Rename.
	Rename map[string]Rename `yaml:"rename"`
	// Validation configures the validation of requests.
	Validation ValidationConfig `yaml:"validation"`
	// WebhookSource is the CloudEvents source attribute of the events the
	// generated webhook senders enqueue; default "urn:idemgen:<package>".
	WebhookSource string `yaml:"webhookSource"`
	// Client asks for a typed client as well: `client: true` writes
	// client.gen.go beside the server; a mapping (output, package) gives it
	// a package of its own. See ClientConfig.
	Client ClientConfig `yaml:"client"`
	// Split compiles the generated types as packages of their own below
	// Output: internal/schematypes (the schemas' types), internal/optypes
	// (each operation's request and response types and response encoder)
	// and internal/unimplemented (Unimplemented and its methods). The
	// package re-exports every one of them by alias, so users still
	// write api.Note; what changes is that no package is as costly to
	// compile as the whole (docs/generate.md, "Compiling the package of a
	// very large spec"). nil (the key left out) splits a spec of more than
	// SplitAbove operations and no other; true or false decides for any
	// spec.
	Split *bool `yaml:"split"`
	// ImportPath is the import path of the package in Output, which Split
	// needs to import its internal packages; default: the module path of
	// the nearest go.mod above Output joined with Output's path below it.
	ImportPath string `yaml:"importPath"`

	// Version is the idemgen version written in the header of every
	// generated file; "" is "(devel)". The command sets it to Version().
	Version string `yaml:"-"`

	// SpecData, when set, is used instead of reading Spec from disk; Spec
	// still names the document in messages and in the generated header.
	SpecData []byte `yaml:"-"`

	// Source names the spec in the generated files (their header, doc
	// comments, NewHandler's messages). LoadConfig sets it to spec as the
	// config file writes it; when empty it is Spec as given (an absolute
	// Spec relative to the module of the output directory).
	Source string `yaml:"-"`

	// file is the config file LoadConfig read, and specLine the line of
	// its spec key: a spec that cannot be read is reported there.
	file     string
	specLine int
	// split is Split as decided for the run's spec (decideSplit).
	split bool
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

// Rename is the Go name chosen for what is generated at one spec location.
// In YAML it is a string (Name) or an object {name: ..., type: ...}.
//
// Name is the identifier of the member the location declares: a property's
// struct field, a union member's field, an enum value's constant, an
// operation's method (and the prefix of its Request and Response types), a
// parameter's request field, a response header's field; where the location
// declares only a type (a component schema, a response), Name is the type's.
// Type names the type generated for an inline schema at a member's location
// (the struct of an inline object property, say).
type Rename struct {
	Name string `yaml:"name"`
	Type string `yaml:"type"`
}

// UnmarshalYAML accepts a string or an object with name and type.
func (r *Rename) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&r.Name)
	}
	type plain Rename
	var p plain
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: rename: want a Go name or an object with name and type", n.Line)
	}
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "name" && k != "type" {
			return fmt.Errorf("line %d: rename: unknown field %q (want name or type)", n.Content[i].Line, k)
		}
	}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = Rename(p)
	return nil
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
		if problems := unknownKeys(path, err); problems != nil {
			return Config{}, &SpecError{Problems: problems}
		}
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg.file = path
	if root, err := load.Nodes(data); err == nil {
		if n, ok := load.At(root, "/spec"); ok {
			cfg.specLine = n.Line
		}
	}
	dir := filepath.Dir(path)
	if cfg.Spec != "" && !filepath.IsAbs(cfg.Spec) {
		cfg.Source = filepath.ToSlash(filepath.Clean(cfg.Spec))
	}
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
	if !token.IsIdentifier(cfg.Package) {
		return fmt.Errorf("config: package %q is not a Go identifier", cfg.Package)
	}
	if cfg.Output == "" {
		cfg.Output = "."
	}
	if cfg.Version == "" {
		cfg.Version = "(devel)"
	}
	if cfg.WebhookSource == "" {
		cfg.WebhookSource = "urn:idemgen:" + cfg.Package
	}
	if cfg.Split != nil && *cfg.Split && cfg.ImportPath == "" {
		p, err := importPath(cfg.Output)
		if err != nil {
			return fmt.Errorf("config: split: the import path of %s: %w (set importPath)", cfg.Output, err)
		}
		cfg.ImportPath = p
	}
	return cfg.Client.normalise(cfg.Output)
}

// configTypes are the types of the config file's mappings, by the name
// yaml.v3 gives them in "field X not found in type generator.T".
var configTypes = map[string]reflect.Type{
	"Config":           reflect.TypeFor[Config](),
	"ValidationConfig": reflect.TypeFor[ValidationConfig](),
	"ClientConfig":     reflect.TypeFor[ClientConfig](),
}

var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type generator\.(\w+)$`)

// unknownKeys rewrites yaml.v3's unknown-field errors as located problems
// with the nearest known key; nil when err holds other errors.
func unknownKeys(path string, err error) []string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return nil
	}
	var problems []string
	for _, e := range te.Errors {
		m := unknownField.FindStringSubmatch(e)
		if m == nil {
			return nil
		}
		t, ok := configTypes[m[3]]
		if !ok {
			return nil
		}
		var keys []string
		for f := range t.Fields() {
			if k, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); k != "" && k != "-" {
				keys = append(keys, k)
			}
		}
		problems = append(problems, fmt.Sprintf("%s: line %s: unknown key %q%s", path, m[1], m[2], suggest.DidYouMean(m[2], keys)))
	}
	return problems
}

// specFileError is err, the failure to read the spec, said where the spec
// is named: the config file's spec key (with the nearest file of that
// directory when it does not exist), or the path as given.
func (cfg *Config) specFileError(err error) error {
	if cfg.file == "" {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	hint := ""
	if errors.Is(err, fs.ErrNotExist) {
		if entries, rerr := os.ReadDir(filepath.Dir(cfg.Spec)); rerr == nil {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			hint = suggest.DidYouMean(filepath.Base(cfg.Spec), names)
		}
	}
	spec := cfg.Source
	if spec == "" {
		spec = cfg.Spec
	}
	return fmt.Errorf("%s: line %d: spec: %s: %w%s", cfg.file, cfg.specLine, spec, err, hint)
}
