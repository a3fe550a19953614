package generator

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Warning is a problem in the spec that generation worked around.
type Warning struct {
	Where   string // spec file and, when known, operation or component
	Message string
}

func (w Warning) String() string {
	if w.Where == "" {
		return w.Message
	}
	return w.Where + ": " + w.Message
}

// ErrSpec is returned (wrapped) when the spec holds errors; the error text
// lists every one of them, sorted, one per line.
var ErrSpec = errors.New("invalid spec")

// SpecError lists every problem found in one spec.
type SpecError struct {
	Problems []string // sorted, each located
}

func (e *SpecError) Error() string { return strings.Join(e.Problems, "\n") }
func (e *SpecError) Unwrap() error { return ErrSpec }

func (e errList) err() error {
	if len(e) == 0 {
		return nil
	}
	p := append([]string(nil), e...)
	sort.Strings(p)
	// drop exact duplicates (a schema reached twice reports once)
	out := p[:1]
	for _, s := range p[1:] {
		if s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	return &SpecError{Problems: out}
}

// loadSpec loads the document with kin-openapi. Local $refs to other files
// are followed; remote ones only when allowRemote is set.
func loadSpec(cfg *Config) (*openapi3.T, error) {
	data := cfg.SpecData
	if data == nil {
		var err error
		if data, err = os.ReadFile(cfg.Spec); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(cfg.Spec)
	if err != nil {
		return nil, err
	}
	location := &url.URL{Path: filepath.ToSlash(abs)}
	if d, ok := split(data); ok {
		// The document in parts, on every core (loadsplit.go); on any error
		// it is loaded again whole, for kin-openapi's own error.
		loader := newLoader(cfg)
		if doc, err := loader.LoadFromDataWithPath(d.top, location); err == nil {
			if err := d.decodeParts(doc); err == nil {
				if err := loader.ResolveRefsIn(doc, location); err == nil {
					nullTypes(doc)
					return doc, nil
				}
			}
		}
	}
	doc, err := newLoader(cfg).LoadFromDataWithPath(data, location)
	if err != nil {
		if problems := danglingRefs(data, specName(cfg)); len(problems) > 0 {
			return nil, &SpecError{Problems: problems}
		}
		return nil, fmt.Errorf("%s: %w", specName(cfg), err)
	}
	nullTypes(doc)
	return doc, nil
}

// nullTypes spells "null" where a schema's type list holds a YAML null:
// `type: [string, null]` is the null type in OpenAPI 3.1, but YAML reads
// the bare word as a null value, which kin-openapi keeps as "". Every
// reader of the document (the model, validation, conformance) then sees
// the type the spec meant.
func nullTypes(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var schema func(sr *openapi3.SchemaRef)
	schemas := func(list openapi3.SchemaRefs) {
		for _, sr := range list {
			schema(sr)
		}
	}
	schema = func(sr *openapi3.SchemaRef) {
		if sr == nil || sr.Value == nil || seen[sr.Value] {
			return
		}
		s := sr.Value
		seen[s] = true
		if s.Type != nil {
			for i, t := range *s.Type {
				if t == "" {
					(*s.Type)[i] = openapi3.TypeNull
				}
			}
		}
		schema(s.Items)
		schema(s.Not)
		schema(s.AdditionalProperties.Schema)
		schemas(s.AllOf)
		schemas(s.AnyOf)
		schemas(s.OneOf)
		schemas(s.PrefixItems)
		schema(s.Contains)
		schema(s.PropertyNames)
		schema(s.If)
		schema(s.Then)
		schema(s.Else)
		schema(s.UnevaluatedItems.Schema)
		schema(s.UnevaluatedProperties.Schema)
		for _, m := range []openapi3.Schemas{s.Properties, s.PatternProperties, s.DependentSchemas} {
			for _, sr := range m {
				schema(sr)
			}
		}
	}
	content := func(c openapi3.Content) {
		for _, mt := range c {
			if mt != nil {
				schema(mt.Schema)
			}
		}
	}
	params := func(ps openapi3.Parameters) {
		for _, p := range ps {
			if p != nil && p.Value != nil {
				schema(p.Value.Schema)
				content(p.Value.Content)
			}
		}
	}
	headers := func(hs openapi3.Headers) {
		for _, h := range hs {
			if h != nil && h.Value != nil {
				schema(h.Value.Schema)
				content(h.Value.Content)
			}
		}
	}
	item := func(it *openapi3.PathItem) {
		if it == nil {
			return
		}
		params(it.Parameters)
		for _, op := range it.Operations() {
			params(op.Parameters)
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				content(op.RequestBody.Value.Content)
			}
			if op.Responses != nil {
				for _, r := range op.Responses.Map() {
					if r != nil && r.Value != nil {
						content(r.Value.Content)
						headers(r.Value.Headers)
					}
				}
			}
		}
	}
	if c := doc.Components; c != nil {
		for _, sr := range c.Schemas {
			schema(sr)
		}
		for _, p := range c.Parameters {
			if p != nil && p.Value != nil {
				schema(p.Value.Schema)
				content(p.Value.Content)
			}
		}
		headers(c.Headers)
		for _, rb := range c.RequestBodies {
			if rb != nil && rb.Value != nil {
				content(rb.Value.Content)
			}
		}
		for _, r := range c.Responses {
			if r != nil && r.Value != nil {
				content(r.Value.Content)
				headers(r.Value.Headers)
			}
		}
	}
	if doc.Paths != nil {
		for _, it := range doc.Paths.Map() {
			item(it)
		}
	}
	for _, it := range doc.Webhooks {
		item(it)
	}
}

func newLoader(cfg *Config) *openapi3.Loader {
	loader := openapi3.NewLoader()
	loader.Context = context.Background()
	loader.IsExternalRefsAllowed = true
	readers := []openapi3.ReadFromURIFunc{openapi3.ReadFromFile}
	if cfg.AllowRemoteRefs {
		readers = append([]openapi3.ReadFromURIFunc{openapi3.ReadFromHTTP(nil)}, readers...)
	}
	read := openapi3.ReadFromURIs(readers...)
	loader.ReadFromURIFunc = func(l *openapi3.Loader, u *url.URL) ([]byte, error) {
		if u.Host != "" && !cfg.AllowRemoteRefs {
			return nil, fmt.Errorf("remote $ref %s is not allowed (set allowRemoteRefs: true to follow it)", u.Redacted())
		}
		return read(l, u)
	}
	return loader
}

func specName(cfg *Config) string { return filepath.Base(cfg.Spec) }

// specWarnings reports the known traps of real specs as warnings and, with
// validate, the first problem kin-openapi's validation of the whole document
// finds. Generation leaves that validation to lint: on Stripe's spec it took
// half of the generator's time, and the model checks what generation needs.
func specWarnings(doc *openapi3.T, file string, validate bool) []Warning {
	var ws []Warning
	add := func(where, format string, args ...any) {
		ws = append(ws, Warning{Where: where, Message: fmt.Sprintf(format, args...)})
	}
	if doc.Info == nil || doc.Info.Version == "" {
		add(file, "info.version is empty")
	}
	schemes := map[string]bool{}
	if doc.Components != nil {
		for name := range doc.Components.SecuritySchemes {
			schemes[name] = true
		}
	}
	undefined := map[string][]string{}
	check := func(reqs *openapi3.SecurityRequirements, where string) {
		if reqs == nil {
			return
		}
		for _, req := range *reqs {
			for name := range req {
				if !schemes[name] {
					undefined[name] = append(undefined[name], where)
				}
			}
		}
	}
	check(&doc.Security, "the document")
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			check(op.Security, fmt.Sprintf("%s %s", method, path))
		}
	}
	for _, name := range sortedKeys(doc.Webhooks) {
		if item := doc.Webhooks[name]; item != nil {
			for method, op := range item.Operations() {
				check(op.Security, fmt.Sprintf("webhook %s %s", name, method))
			}
		}
	}
	for _, name := range sortedKeys(undefined) {
		refs := undefined[name]
		sort.Strings(refs)
		add(file, "security scheme %q is not defined (used by %d operations, e.g. %s); a requirement that names it never admits a request (401)", name, len(refs), refs[0])
	}
	if validate {
		if err := doc.Validate(context.Background(),
			openapi3.DisableExamplesValidation(),
			openapi3.DisableSchemaDefaultsValidation(),
			openapi3.DisableSchemaPatternValidation(),
			openapi3.AllowExtraSiblingFields("description", "summary")); err != nil {
			msg := strings.SplitN(err.Error(), "\n", 2)[0]
			add(file, "openapi validation (not fatal): %s", msg)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].String() < ws[j].String() })
	return ws
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
