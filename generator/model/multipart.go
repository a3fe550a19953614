package model

import (
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// jsonParts lists the top-level properties of a multipart/form-data body
// whose parts hold JSON, as OpenAPI says a part's content type is chosen:
// the encoding's contentType when it names one (JSON when any of its
// comma-separated types is application/json or +json); otherwise an
// encoding with style or explode sends the property in bracket notation,
// as a form; otherwise the default of the property's type: JSON for an
// object, for an array that of its items, text for the rest (and
// application/octet-stream for binary, a file part). An object with a
// binary member below it is not a JSON part: its files are parts of their
// own, named in bracket notation (cover[image]).
func (b *builder) jsonParts(media *openapi3.MediaType) []string {
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return nil
	}
	var out []string
	for _, name := range sortedKeys(media.Schema.Value.Properties) {
		if e := media.Encoding[name]; e != nil {
			if e.ContentType != "" {
				if contentTypeJSON(e.ContentType) {
					out = append(out, name)
				}
				continue
			}
			if e.Style != "" || e.Explode != nil {
				continue
			}
		}
		if p := media.Schema.Value.Properties[name]; defaultJSONPart(p) && !b.hasBinary(p.Value, map[*openapi3.Schema]bool{}) {
			out = append(out, name)
		}
	}
	return out
}

// formParts lists the properties of a multipart/form-data body whose
// encoding contentType is application/x-www-form-urlencoded: the part
// holds a form of the property's members (idemimpl.Media.FormParts).
func formParts(media *openapi3.MediaType) []string {
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return nil
	}
	var out []string
	for _, name := range sortedKeys(media.Schema.Value.Properties) {
		if e := media.Encoding[name]; e != nil && contentTypeForm(e.ContentType) {
			out = append(out, name)
		}
	}
	return out
}

// contentTypeForm reports whether an encoding's contentType (a list of
// media types) is application/x-www-form-urlencoded.
func contentTypeForm(list string) bool {
	for _, ct := range strings.Split(list, ",") {
		mt, _, err := jsonkit.ParseMediaType(strings.TrimSpace(ct))
		if err == nil && mt == "application/x-www-form-urlencoded" {
			return true
		}
	}
	return false
}

func contentTypeJSON(list string) bool {
	for _, ct := range strings.Split(list, ",") {
		mt, _, err := jsonkit.ParseMediaType(strings.TrimSpace(ct))
		if err == nil && jsonkit.IsJSON(mt) {
			return true
		}
	}
	return false
}

// defaultJSONPart reports whether a property's parts are JSON when its
// encoding does not say: an object, or an array of objects.
func defaultJSONPart(sr *openapi3.SchemaRef) bool {
	if sr == nil || sr.Value == nil {
		return false
	}
	s := sr.Value
	types, _ := typesOf(s)
	has := func(t string) bool {
		for _, x := range types {
			if x == t {
				return true
			}
		}
		return false
	}
	switch {
	case has(openapi3.TypeObject) || len(types) == 0 && len(s.Properties) > 0:
		return true
	case has(openapi3.TypeArray):
		return defaultJSONPart(s.Items)
	}
	return false
}

// ClientJSONParts are the JSON parts of the body's multipart media type,
// which the generated client passes to idemclient's Encode after the body;
// nil for another media type.
func (bd *Body) ClientJSONParts() []string {
	if m := bd.clientMultipart(); m != nil {
		return m.JSONParts
	}
	return nil
}

// ClientFormParts are the parts of the body's multipart media type that
// hold a form; with any, the generated client calls idemclient's
// EncodeParts with them and ClientJSONParts instead of Encode. Nil for
// another media type.
func (bd *Body) ClientFormParts() []string {
	if m := bd.clientMultipart(); m != nil {
		return m.FormParts
	}
	return nil
}

// clientMultipart is the multipart media type the generated client sends
// the body in, or nil when it sends another.
func (bd *Body) clientMultipart() *BodyMedia {
	if len(bd.Media) == 0 || bd.Media[0].Decode != idemimpl.AsMultipart || bd.MediaType != bd.Media[0].Type && !strings.EqualFold(bd.MediaType, bd.Media[0].Type) {
		return nil
	}
	return bd.Media[0]
}

// partTypes holds the multipart variants of named types. A binary string
// is an idemtype.File in a multipart/form-data body and []byte (base64) in
// JSON, so a schema reachable from both with a binary member somewhere
// below it needs two Go types: the one declared for it (the JSON form,
// under its own name) and a variant for multipart bodies, named after it
// with the suffix Multipart (DocMultipart). A schema without a binary
// member below it has one type for both.
type partTypes struct {
	variant map[*Type]*Type
	binary  map[*openapi3.Schema]bool // memo of hasBinary
}

// partVariant returns the multipart variant of t when the representations
// differ, declaring it on first use; nil when t serves both.
func (b *builder) partVariant(t *Type) *Type {
	if b.tb(t).schema == nil || !b.hasBinary(b.tb(t).schema, map[*openapi3.Schema]bool{}) {
		return nil
	}
	if b.parts.variant == nil {
		b.parts.variant = map[*Type]*Type{}
	}
	if v := b.parts.variant[t]; v != nil {
		return v
	}
	loc := t.Location + " as multipart/form-data"
	v := &Type{Location: loc, Doc: t.Doc, Kind: kindUndeclared}
	b.tb(v).schema = b.tb(t).schema
	b.types = append(b.types, v) // not in bySchema: the schema's own type stays t
	b.parts.variant[t] = v
	b.tb(v).ident = b.names.derived(b.names.pkg, &v.Name, b.tb(t).ident, "Multipart", loc, "multipart variant of "+t.Location, rankInline, false)
	b.declare(v)
	return v
}

// hasBinary reports whether a binary string (format: binary) is reachable
// from s through properties, items, additional properties and the members
// of allOf, anyOf and oneOf.
func (b *builder) hasBinary(s *openapi3.Schema, visiting map[*openapi3.Schema]bool) bool {
	if s == nil || visiting[s] {
		return false
	}
	if v, ok := b.parts.binary[s]; ok {
		return v
	}
	visiting[s] = true
	defer delete(visiting, s)
	found := false
	if types, _ := typesOf(s); s.Format == "binary" && (len(types) == 0 || types[0] == openapi3.TypeString) {
		found = true
	}
	refs := make([]*openapi3.SchemaRef, 0, len(s.Properties)+4)
	for _, name := range sortedKeys(s.Properties) {
		refs = append(refs, s.Properties[name])
	}
	refs = append(refs, s.Items, s.AdditionalProperties.Schema)
	refs = append(refs, s.AllOf...)
	refs = append(refs, s.AnyOf...)
	refs = append(refs, s.OneOf...)
	for _, r := range refs {
		if found {
			break
		}
		if r != nil {
			found = b.hasBinary(r.Value, visiting)
		}
	}
	if b.parts.binary == nil {
		b.parts.binary = map[*openapi3.Schema]bool{}
	}
	b.parts.binary[s] = found
	return found
}

// fileVariant is partVariant while a multipart body is typed, else nil.
func (b *builder) fileVariant(t *Type) *Type {
	if !b.fileParts {
		return nil
	}
	return b.partVariant(t)
}
