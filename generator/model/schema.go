package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// nameHint names the type of an inline schema: its parent's final name
// followed by suffix, or suffix alone at the top.
type nameHint struct {
	parent *ident
	suffix string
	// alone: the type is an operation's or a webhook's own body, named
	// after it; it is not shared with schemas of the same shape (share.go).
	alone bool
}

func (h nameHint) plus(s string) nameHint { return nameHint{parent: h.parent, suffix: h.suffix + s} }

// schemaType returns the Go type of a schema and whether it allows null;
// inline schemas that need a name are named after hint.
func (b *builder) schemaType(sr *openapi3.SchemaRef, hint nameHint, loc string) (GoType, bool) {
	if sr == nil || sr.Value == nil {
		return GoType{Kind: GoAny}, false
	}
	var copyNullable bool
	if c := b.refCopy(sr); c != nil {
		_, copyNullable = typesOf(sr.Value)
		sr = c.typed
	}
	eff, effLoc, nullable, orEmpty := unwrap(sr, loc)
	nullable = nullable || copyNullable
	if eff == nil || eff.Value == nil {
		return GoType{Kind: GoAny}, nullable
	}
	gt := b.typeOf(eff, hint, effLoc)
	if _, n := typesOf(eff.Value); n {
		nullable = true
	}
	if members, _, null := unionMembers(eff.Value); members != nil {
		nullable = nullable || null
		for _, m := range members {
			if m.sr != nil && m.sr.Value != nil {
				if _, _, n, _ := unwrap(m.sr, ""); n {
					nullable = true
				}
			}
		}
	} else if len(unionEnum(eff.Value)) > 0 {
		_, null := nonNull(append(eff.Value.OneOf, eff.Value.AnyOf...))
		nullable = nullable || null
	}
	if orEmpty && !(gt.Kind == GoBuiltin && gt.Name == "string") {
		elem := gt
		gt = GoType{Kind: GoOrEmpty, Elem: &elem}
	}
	return gt, nullable
}

// goType is schemaType without the nullability.
func (b *builder) goType(sr *openapi3.SchemaRef, hint nameHint, loc string) GoType {
	gt, _ := b.schemaType(sr, hint, loc)
	return gt
}

// typeOf returns the Go type of a schema that is not a wrapper.
func (b *builder) typeOf(sr *openapi3.SchemaRef, hint nameHint, loc string) GoType {
	s := sr.Value
	if t, ok := b.bySchema[s]; ok {
		if t.Kind == kindUndeclared && !b.tb(t).building {
			b.declare(t)
		}
		if v := b.fileVariant(t); v != nil {
			return named(v)
		}
		return named(t)
	}
	if !needsNamedType(s) {
		return b.plainType(s, hint, loc)
	}
	if sr.Ref != "" {
		// A schema outside components (in another file, say): named after
		// the last segment of its $ref. The loader may hand out a copy per
		// reference: the $ref identifies it.
		if t := b.byRef[sr.Ref]; t != nil {
			if v := b.fileVariant(t); v != nil {
				return named(v)
			}
			return named(t)
		}
		t := b.newType(s, sr.Ref)
		b.byRef[sr.Ref] = t
		want := goName(sr.Ref[strings.LastIndexAny(sr.Ref, "/#")+1:])
		b.tb(t).ident = b.names.typeIdent(&t.Name, want, sr.Ref, rankComponent, exactWords)
		b.declare(t)
		return named(t)
	}
	if t := b.sharedUnion(s, loc); t != nil {
		return named(t)
	}
	t := b.newType(s, loc)
	b.tb(t).ident = b.inlineIdent(&t.Name, hint, loc)
	if !hint.alone {
		b.tb(t).inline, b.tb(t).suffix = true, hint.suffix
	}
	b.declare(t)
	return named(t)
}

// inlineIdent names the type of an inline schema after hint.
func (b *builder) inlineIdent(dst *string, hint nameHint, loc string) *ident {
	if hint.parent == nil {
		return b.names.typeIdent(dst, hint.suffix, loc, rankInline, exactWords)
	}
	return b.names.derived(b.names.pkg, dst, hint.parent, hint.suffix, loc, "schema", rankInline, false)
}

// sharedUnion returns the one type of every union whose members are all
// named or scalar (Stripe's expandable `anyOf: [string, {$ref: customer}]`
// recurs hundreds of times): StringOrCustomer. It returns nil for other
// unions, which are named where they stand.
func (b *builder) sharedUnion(s *openapi3.Schema, loc string) *Type {
	members, kw, _ := unionMembers(s)
	if members == nil || s.Discriminator != nil || len(s.Properties) > 0 {
		return nil
	}
	for _, m := range members {
		if !inlineFree(m.sr, 0) {
			return nil
		}
	}
	var key strings.Builder
	var gts []GoType
	for _, m := range members {
		gt, _ := b.schemaType(m.sr, nameHint{}, fmt.Sprintf("%s/%s/%d", loc, kw, m.i))
		gts = append(gts, gt)
		key.WriteString(typeKey(gt) + "|")
	}
	if t := b.unions[key.String()]; t != nil {
		return t
	}
	t := b.newType(s, loc)
	b.unions[key.String()] = t
	var deps []*ident
	for _, gt := range gts {
		deps = append(deps, b.typeIdents(gt)...)
	}
	b.tb(t).ident = b.names.add(&ident{scope: b.names.pkg, dst: &t.Name, loc: loc, what: "schema", rank: rankInline,
		want: func() string {
			var parts []string
			for i, gt := range gts {
				parts = append(parts, variantWant(gt, i))
			}
			return strings.Join(parts, "Or")
		}}, deps...)
	b.declare(t)
	return t
}

// inlineFree reports whether a schema's Go type needs no inline named type.
func inlineFree(sr *openapi3.SchemaRef, depth int) bool {
	if sr == nil || sr.Value == nil || depth > 8 {
		return sr == nil || sr.Value == nil
	}
	eff, _, _, _ := unwrap(sr, "")
	if eff == nil || eff.Value == nil || eff.Ref != "" {
		return true
	}
	s := eff.Value
	if needsNamedType(s) {
		return false
	}
	if s.Items != nil && !inlineFree(s.Items, depth+1) {
		return false
	}
	return s.AdditionalProperties.Schema == nil || inlineFree(s.AdditionalProperties.Schema, depth+1)
}

// typeKey identifies a Go type within one run.
func typeKey(t GoType) string {
	switch t.Kind {
	case GoNamed:
		return fmt.Sprintf("named:%p", t.Named)
	case GoSlice, GoMap, GoPointer, GoNullable, GoOrEmpty:
		return fmt.Sprintf("%d(%s)", t.Kind, typeKey(*t.Elem))
	}
	return fmt.Sprintf("%d:%s", t.Kind, t.Name)
}

// typeIdents returns the identifiers of the named types t is made of.
func (b *builder) typeIdents(t GoType) []*ident {
	switch t.Kind {
	case GoNamed:
		return []*ident{b.tb(t.Named).ident}
	case GoSlice, GoMap, GoPointer, GoNullable, GoOrEmpty:
		return b.typeIdents(*t.Elem)
	}
	return nil
}

// variantWant is the preferred name of a union member of type t.
func variantWant(t GoType, i int) string {
	switch t.Kind {
	case GoNamed:
		return t.Named.Name
	case GoBuiltin:
		return goName(t.Name)
	case GoTime:
		return "Time"
	case GoDate:
		return "Date"
	case GoUUID:
		return "UUID"
	case GoBytes:
		return "Bytes"
	case GoFile:
		return "File"
	case GoSlice:
		return variantWant(*t.Elem, i) + "List"
	case GoMap:
		return variantWant(*t.Elem, i) + "Map"
	case GoPointer, GoOrEmpty, GoNullable:
		return variantWant(*t.Elem, i)
	}
	return "Variant" + strconv.Itoa(i+1)
}

// plainType is the Go type of a schema that needs no name of its own.
func (b *builder) plainType(s *openapi3.Schema, hint nameHint, loc string) GoType {
	types, _ := typesOf(s)
	if len(types) > 1 {
		return GoType{Kind: GoAny}
	}
	if len(types) == 0 && isObjectish(s, types) {
		types = []string{openapi3.TypeObject}
	}
	if len(types) == 0 {
		if s.Items != nil {
			types = []string{openapi3.TypeArray}
		} else {
			return GoType{Kind: GoAny}
		}
	}
	switch types[0] {
	case openapi3.TypeString:
		switch s.Format {
		case "date-time":
			return GoType{Kind: GoTime}
		case "date":
			return GoType{Kind: GoDate}
		case "uuid":
			return GoType{Kind: GoUUID}
		case "binary", "byte":
			if s.Format == "binary" && b.fileParts {
				return GoType{Kind: GoFile}
			}
			return GoType{Kind: GoBytes}
		}
		return GoType{Kind: GoBuiltin, Name: "string"}
	case openapi3.TypeInteger:
		if s.Format == "int32" {
			return GoType{Kind: GoBuiltin, Name: "int32"}
		}
		return GoType{Kind: GoBuiltin, Name: "int64"}
	case openapi3.TypeNumber:
		if s.Format == "float" {
			return GoType{Kind: GoBuiltin, Name: "float32"}
		}
		return GoType{Kind: GoBuiltin, Name: "float64"}
	case openapi3.TypeBoolean:
		return GoType{Kind: GoBuiltin, Name: "bool"}
	case openapi3.TypeArray:
		elem, nullable := b.schemaType(s.Items, hint.plus("Item"), loc+"/items")
		if nullable && !elem.nilable() {
			elem = ptr(elem)
		}
		return GoType{Kind: GoSlice, Elem: &elem}
	case openapi3.TypeObject:
		elem := GoType{Kind: GoAny}
		if ap := s.AdditionalProperties.Schema; ap != nil {
			var nullable bool
			elem, nullable = b.schemaType(ap, hint.plus("Value"), loc+"/additionalProperties")
			if nullable && !elem.nilable() {
				elem = ptr(elem)
			}
		}
		return GoType{Kind: GoMap, Elem: &elem}
	}
	return GoType{Kind: GoAny}
}

// kindUndeclared marks a component type whose declaration is still to come.
const kindUndeclared TypeKind = -1

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
