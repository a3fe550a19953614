// Package load reads an OpenAPI document with kin-openapi. It is the
// generator's one door to the document's bytes: the parallel loading of a
// large spec in parts (parallel.go, a workaround for the cost of kin-openapi's
// nested decoding), the loader's rules for external references, and the
// fix-ups every reader of the document relies on (NullTypes, NullConsts).
package load

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/getkin/kin-openapi/openapi3"
)

// Options are the loader's settings.
type Options struct {
	// AllowRemoteRefs lets $refs to http(s) URLs be fetched.
	AllowRemoteRefs bool
}

// Document loads the OpenAPI document data, read from path (local $refs
// are resolved against it), with kin-openapi: in parts on every core when
// the split handles the document (parallel.go), else whole; an error is
// kin-openapi's for the whole document. Type lists holding a YAML null
// then say "null" (NullTypes), and `const: null` is `enum: [null]`
// (NullConsts).
func Document(data []byte, path string, opts Options) (*openapi3.T, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	location := &url.URL{Path: filepath.ToSlash(abs)}
	if d, ok := split(data); ok {
		// The document in parts, on every core (parallel.go); on any error
		// it is loaded again whole, for kin-openapi's own error.
		loader := NewLoader(opts)
		if doc, err := loader.LoadFromDataWithPath(d.top, location); err == nil {
			if err := d.decodeParts(doc); err == nil {
				if err := loader.ResolveRefsIn(doc, location); err == nil {
					NullTypes(doc)
					NullConsts(data, doc)
					return doc, nil
				}
			}
		}
	}
	doc, err := NewLoader(opts).LoadFromDataWithPath(data, location)
	if err != nil {
		return nil, err
	}
	NullTypes(doc)
	NullConsts(data, doc)
	return doc, nil
}

// NullTypes spells "null" where a schema's type list holds a YAML null:
// `type: [string, null]` is the null type in OpenAPI 3.1, but YAML reads
// the bare word as a null value, which kin-openapi keeps as "". Every
// reader of the document (the model, validation, conformance) then sees
// the type the spec meant.
func NullTypes(doc *openapi3.T) {
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

// NewLoader is kin-openapi's loader as Document uses it: external $refs
// are read from files, and from the network only with AllowRemoteRefs.
func NewLoader(opts Options) *openapi3.Loader {
	loader := openapi3.NewLoader()
	loader.Context = context.Background()
	loader.IsExternalRefsAllowed = true
	readers := []openapi3.ReadFromURIFunc{openapi3.ReadFromFile}
	if opts.AllowRemoteRefs {
		readers = append([]openapi3.ReadFromURIFunc{openapi3.ReadFromHTTP(nil)}, readers...)
	}
	read := openapi3.ReadFromURIs(readers...)
	loader.ReadFromURIFunc = func(l *openapi3.Loader, u *url.URL) ([]byte, error) {
		if u.Host != "" && !opts.AllowRemoteRefs {
			return nil, fmt.Errorf("remote $ref %s is not allowed (set allowRemoteRefs: true to follow it)", u.Redacted())
		}
		return read(l, u)
	}
	return loader
}
