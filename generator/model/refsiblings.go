// OpenAPI 3.1 lets a $ref have sibling keywords, which JSON Schema 2020-12
// applies beside the referenced schema. kin-openapi gives such a $ref a
// copy of its target with the annotations overlaid and the other keywords
// appended as one more allOf member; the copy would be a second type of
// the same name (Media2 beside Media). Here a copy is typed as what it
// means: the referenced type when the siblings only annotate, an allOf of
// the referenced schema and the siblings when they constrain.

package model

import (
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/internal/load"
)

// refCopy is what a $ref with sibling keywords stands for.
type refCopy struct {
	// target is a $ref to the referenced schema itself.
	target *openapi3.SchemaRef
	// typed is what types the $ref: target when the siblings only
	// annotate; an inline allOf of target and the siblings when they
	// constrain; the copy itself, inline, when they change more (a
	// discriminator).
	typed *openapi3.SchemaRef
	// docOnly: the siblings only document (description, title, examples,
	// deprecated, ...), so validation is the target's too.
	docOnly bool
}

// docKeywords are the Schema fields of keywords that only document a
// value; useKeywords those that say something about one use of a type (a
// member's default, nullability, direction) without changing the type.
var (
	docKeywords = map[string]bool{"Extensions": true, "Origin": true, "Title": true, "Description": true, "Example": true,
		"Examples": true, "ExternalDocs": true, "Deprecated": true, "XML": true, "Comment": true}
	useKeywords = map[string]bool{"Default": true, "Nullable": true, "ReadOnly": true, "WriteOnly": true, "AllowEmptyValue": true}
)

// refCopy returns what sr stands for when it is a local $ref of an OpenAPI
// 3.1 document whose value is a copy of the referenced schema with sibling
// keywords applied; nil otherwise. A $ref to another file is typed by its
// reference (byRef), as before.
func (b *builder) refCopy(sr *openapi3.SchemaRef) *refCopy {
	if sr == nil || sr.Value == nil || !strings.HasPrefix(sr.Ref, "#/") || !b.doc.IsOpenAPI31OrLater() {
		return nil
	}
	if c, ok := b.copies[sr.Value]; ok {
		return c
	}
	var c *refCopy
	if target, ok := load.Lookup(b.doc, sr.Ref[1:]).(*openapi3.Schema); ok && target != sr.Value {
		c = classifyCopy(sr, target)
	}
	b.copies[sr.Value] = c
	return c
}

// classifyCopy compares sr's value, a copy of target with sibling keywords
// applied, with target, field by field (a field the siblings left alone is
// the target's own slice, map or pointer, which reflect.DeepEqual matches
// at once).
func classifyCopy(sr *openapi3.SchemaRef, target *openapi3.Schema) *refCopy {
	cp := sr.Value
	c := &refCopy{target: &openapi3.SchemaRef{Ref: sr.Ref, Value: target}}
	cv, tv := reflect.ValueOf(cp).Elem(), reflect.ValueOf(target).Elem()
	var conjunct *openapi3.SchemaRef
	use, other := false, false
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		if !f.IsExported() || docKeywords[f.Name] {
			continue
		}
		same := reflect.DeepEqual(cv.Field(i).Interface(), tv.Field(i).Interface())
		switch {
		case same:
		case f.Name == "AllOf" && len(cp.AllOf) == len(target.AllOf)+1 && slices.Equal(cp.AllOf[:len(target.AllOf)], target.AllOf):
			conjunct = cp.AllOf[len(target.AllOf)]
		case useKeywords[f.Name]:
			use = true
		default:
			other = true
		}
	}
	switch {
	case other:
		c.typed = &openapi3.SchemaRef{Value: cp}
	case conjunct != nil:
		c.typed = &openapi3.SchemaRef{Value: &openapi3.Schema{
			AllOf:       openapi3.SchemaRefs{c.target, conjunct},
			Description: cp.Description, Nullable: cp.Nullable, ReadOnly: cp.ReadOnly, WriteOnly: cp.WriteOnly,
		}}
	default:
		c.typed, c.docOnly = c.target, !use
	}
	return c
}
