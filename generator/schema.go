package generator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

// typesOf splits a schema's type list into the non-null types and whether
// null is allowed.
func typesOf(s *openapi3.Schema) (types []string, nullable bool) {
	nullable = s.Nullable
	if s.Type != nil {
		for _, t := range *s.Type {
			if t == openapi3.TypeNull {
				nullable = true
				continue
			}
			types = append(types, t)
		}
	}
	return types, nullable
}

func isObjectish(s *openapi3.Schema, types []string) bool {
	if len(types) == 1 && types[0] == openapi3.TypeObject {
		return true
	}
	return len(types) == 0 && (len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil)
}

// shapeless reports a schema that constrains without typing: no type,
// properties, items, enum, format, $ref or subschemas (`{required: [a]}`,
// the members of a oneOf that says which properties go together).
func shapeless(sr *openapi3.SchemaRef) bool {
	if sr == nil || sr.Value == nil {
		return true
	}
	s := sr.Value
	return sr.Ref == "" && s.Type == nil && len(s.Properties) == 0 && s.Items == nil && len(s.Enum) == 0 &&
		s.Format == "" && s.AdditionalProperties.Schema == nil && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0
}

// hasShapeOfItsOwn reports whether s types a value besides its subschemas.
func hasShapeOfItsOwn(s *openapi3.Schema) bool {
	return len(s.Properties) > 0 || s.Items != nil || s.AdditionalProperties.Schema != nil || len(s.Enum) > 0 || s.Discriminator != nil
}

// isEmptyString reports the `{enum: [""]}` of Stripe's "X or empty string".
func isEmptyString(sr *openapi3.SchemaRef) bool {
	if sr == nil || sr.Value == nil || len(sr.Value.Enum) != 1 || sr.Value.Enum[0] != "" {
		return false
	}
	types, _ := typesOf(sr.Value)
	return len(types) == 0 || (len(types) == 1 && types[0] == openapi3.TypeString)
}

// unwrap sees through the wrappers real specs put around a type:
// `allOf|anyOf|oneOf: [{$ref: X}]` (with nullable or a description beside
// it) is X; `anyOf: [X, {enum: [""]}]` is X or the empty string (Stripe's
// way to unset a field). It returns the schema that types sr, its location
// relative to loc, whether a wrapper allowed null, and whether the empty
// string is allowed besides X.
func unwrap(sr *openapi3.SchemaRef, loc string) (eff *openapi3.SchemaRef, effLoc string, nullable, orEmpty bool) {
	for range 32 { // wrappers of wrappers; a bound against a cycle of them
		if sr == nil || sr.Value == nil {
			return sr, loc, nullable, orEmpty
		}
		s := sr.Value
		_, n := typesOf(s)
		nullable = nullable || n
		if hasShapeOfItsOwn(s) {
			return sr, loc, nullable, orEmpty
		}
		var next *openapi3.SchemaRef
		var step string
		for _, l := range []struct {
			kw   string
			list openapi3.SchemaRefs
		}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}} {
			switch {
			case len(l.list) == 0:
			case next != nil:
				return sr, loc, nullable, orEmpty // two keywords: not a wrapper
			case len(l.list) == 1:
				next, step = l.list[0], "/"+l.kw+"/0"
			case len(l.list) == 2 && l.kw != "allOf" && isEmptyString(l.list[1]) != isEmptyString(l.list[0]):
				i := 0
				if isEmptyString(l.list[0]) {
					i = 1
				}
				next, step = l.list[i], fmt.Sprintf("/%s/%d", l.kw, i)
				orEmpty = true
			default:
				return sr, loc, nullable, orEmpty
			}
		}
		if next == nil {
			return sr, loc, nullable, orEmpty
		}
		sr = next
		if next.Ref != "" {
			loc = next.Ref
		} else {
			loc += step
		}
	}
	return sr, loc, nullable, orEmpty
}

// unionMembers returns the members of a oneOf/anyOf that types a value: nil
// when there is none, when every member is shapeless (they only constrain
// the properties beside them), or when every member is a string enum (the
// union is then one enum).
func unionMembers(s *openapi3.Schema) (openapi3.SchemaRefs, string) {
	members, kw := s.OneOf, "oneOf"
	if len(members) == 0 {
		members, kw = s.AnyOf, "anyOf"
	}
	if len(members) == 0 || len(s.Properties) > 0 && !slices.ContainsFunc(members, func(m *openapi3.SchemaRef) bool { return !shapeless(m) }) {
		return nil, ""
	}
	if len(unionEnum(s)) > 0 {
		return nil, ""
	}
	return members, kw
}

// unionEnum returns the values of a oneOf/anyOf of string enums, in order.
func unionEnum(s *openapi3.Schema) []string {
	members := s.OneOf
	if len(members) == 0 {
		members = s.AnyOf
	}
	var out []string
	for _, m := range members {
		if m == nil || m.Value == nil {
			return nil
		}
		vals := plainStringEnum(m.Value)
		if len(vals) == 0 {
			return nil
		}
		for _, v := range vals {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func plainStringEnum(s *openapi3.Schema) []string {
	types, _ := typesOf(s)
	if len(s.Enum) == 0 || len(types) > 1 || len(types) == 1 && types[0] != openapi3.TypeString {
		return nil
	}
	var out []string
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			if !slices.Contains(out, str) { // GitHub lists "*" twice
				out = append(out, str)
			}
		} else if v != nil {
			return nil
		}
	}
	return out
}

// stringEnum returns the values of a string enum (or of a union of them).
func stringEnum(s *openapi3.Schema) []string {
	if out := plainStringEnum(s); len(out) > 0 {
		return out
	}
	if len(s.Properties) == 0 {
		return unionEnum(s)
	}
	return nil
}

// enumLoc is the location of value v in the enum of s (or of one of its
// oneOf/anyOf members).
func enumLoc(s *openapi3.Schema, v, loc string) string {
	if i := slices.Index(s.Enum, any(v)); i >= 0 {
		return fmt.Sprintf("%s/enum/%d", loc, i)
	}
	for _, l := range []struct {
		kw   string
		list openapi3.SchemaRefs
	}{{"oneOf", s.OneOf}, {"anyOf", s.AnyOf}} {
		for i, m := range l.list {
			if m != nil && m.Value != nil {
				if j := slices.Index(m.Value.Enum, any(v)); j >= 0 {
					return fmt.Sprintf("%s/%s/%d/enum/%d", loc, l.kw, i, j)
				}
			}
		}
	}
	return loc
}

// needsNamedType reports whether an inline schema becomes a named type.
func needsNamedType(s *openapi3.Schema) bool {
	if m, _ := unionMembers(s); m != nil {
		return true
	}
	if len(s.AllOf) > 0 || len(stringEnum(s)) > 0 {
		return true
	}
	types, _ := typesOf(s)
	return isObjectish(s, types) && len(s.Properties) > 0
}

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
	eff, effLoc, nullable, orEmpty := unwrap(sr, loc)
	if eff == nil || eff.Value == nil {
		return GoType{Kind: GoAny}, nullable
	}
	gt := b.typeOf(eff, hint, effLoc)
	if _, n := typesOf(eff.Value); n {
		nullable = true
	}
	if members, _ := unionMembers(eff.Value); members != nil {
		for _, m := range members {
			if m != nil && m.Value != nil {
				if _, _, n, _ := unwrap(m, ""); n {
					nullable = true
				}
			}
		}
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
	members, kw := unionMembers(s)
	if members == nil || s.Discriminator != nil || len(s.Properties) > 0 {
		return nil
	}
	for _, m := range members {
		if !inlineFree(m, 0) {
			return nil
		}
	}
	var key strings.Builder
	var gts []GoType
	for i, m := range members {
		gt, _ := b.schemaType(m, nameHint{}, fmt.Sprintf("%s/%s/%d", loc, kw, i))
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

// declare builds named type t from its schema. Types are declared depth
// first (a component when first used), so that a type still being declared
// is exactly one on the path to here: a field of such a type is a pointer,
// and no struct contains itself by value.
func (b *builder) declare(t *Type) {
	s, loc := b.tb(t).schema, t.Location
	b.tb(t).building = true
	defer func() { b.tb(t).building = false }()
	self := nameHint{parent: b.tb(t).ident}
	if eff, effLoc, _, orEmpty := unwrap(&openapi3.SchemaRef{Value: s}, loc); eff != nil && eff.Value != s {
		t.Kind = KindAlias
		t.Alias = b.goType(eff, self, effLoc)
		if orEmpty && !(t.Alias.Kind == GoBuiltin && t.Alias.Name == "string") {
			elem := t.Alias
			t.Alias = GoType{Kind: GoOrEmpty, Elem: &elem}
		}
		return
	}
	types, _ := typesOf(s)
	if members, kw := unionMembers(s); members != nil {
		b.declareUnion(t, members, kw)
		return
	}
	if vals := stringEnum(s); len(vals) > 0 {
		t.Kind = KindEnum
		t.Enum = make([]EnumValue, len(vals))
		for i, v := range vals {
			t.Enum[i].Value = v
		}
		suffixes := enumSuffixes(vals)
		for i := range t.Enum {
			id := b.names.derived(b.names.pkg, &t.Enum[i].Name, b.tb(t).ident, suffixes[i], enumLoc(s, vals[i], loc), "enum value", rankConstant, true)
			id.exact = closeness(vals[i], suffixes[i])
		}
		return
	}
	switch {
	case len(s.AllOf) > 0:
		t.Kind = KindStruct
		seen := map[string]*Field{}
		var walk func(s *openapi3.Schema, loc string, depth int)
		walk = func(s *openapi3.Schema, loc string, depth int) {
			for i, sub := range s.AllOf {
				if sub != nil && sub.Value != nil && depth < 16 {
					subloc := loc + "/allOf/" + strconv.Itoa(i)
					if sub.Ref != "" {
						subloc = sub.Ref
					}
					walk(sub.Value, subloc, depth+1)
				}
			}
			b.addFields(t, s, loc, seen)
		}
		walk(s, loc, 0)
		if len(t.Fields) == 0 && t.AdditionalProperties == nil {
			// allOf of constraints on a scalar: the type of the first
			// member that has one.
			for i, sub := range s.AllOf {
				if !shapeless(sub) {
					t.Kind = KindAlias
					t.Alias = b.goType(sub, self, fmt.Sprintf("%s/allOf/%d", loc, i))
					break
				}
			}
		}
	case isObjectish(s, types) && len(s.Properties) > 0:
		t.Kind = KindStruct
		b.addFields(t, s, loc, map[string]*Field{})
	default:
		t.Kind = KindAlias
		t.Alias = b.plainType(s, self, loc)
	}
}

// declareUnion makes t a struct with one pointer field per member.
func (b *builder) declareUnion(t *Type, members openapi3.SchemaRefs, kw string) {
	t.Kind = KindUnion
	fields := b.names.scope("fields of union "+t.Location, reservedNames[reservedTypeMembers]...)
	s, loc := b.tb(t).schema, t.Location
	for i, m := range members {
		mloc := fmt.Sprintf("%s/%s/%d", loc, kw, i)
		gt := b.goType(m, nameHint{parent: b.tb(t).ident, suffix: "Variant" + strconv.Itoa(i+1)}, mloc)
		v := &Variant{Type: gt, Location: mloc}
		if m != nil && m.Value != nil {
			eff, _, _, _ := unwrap(m, "")
			v.JSON = jsonKinds(eff.Value, 0)
		}
		b.names.add(&ident{scope: fields, dst: &v.Name, loc: mloc, what: "union member", rank: rankComponent, member: true,
			want: func() string { return variantWant(v.Type, i) }}, b.typeIdents(gt)...) // v.Type: after sharing (share.go)
		t.Variants = append(t.Variants, v)
	}
	d := s.Discriminator
	if d == nil {
		return
	}
	t.Discriminator = d.PropertyName
	tagged := map[int]bool{}
	for _, value := range sortedKeys(d.Mapping) {
		target := d.Mapping[value]
		i := mappingMember(members, target.Ref, target.Value)
		if i < 0 {
			b.warnf(loc, "discriminator mapping %q: %s is not a member of the %s; the value is refused", value, target.Ref, kw)
			continue
		}
		t.Variants[i].Tags = append(t.Variants[i].Tags, value)
		tagged[i] = true
	}
	for i, m := range members {
		if !tagged[i] && m != nil && m.Ref != "" {
			t.Variants[i].Tags = append(t.Variants[i].Tags, m.Ref[strings.LastIndexAny(m.Ref, "/#")+1:])
		}
	}
}

// mappingMember returns the index of the union member a discriminator
// mapping value names, -1 for none. OpenAPI allows a reference
// ("#/components/schemas/Dog") or a bare schema name ("Dog"), which names
// the component of that name (kin-openapi leaves it unresolved).
func mappingMember(members openapi3.SchemaRefs, ref string, value *openapi3.Schema) int {
	for i, m := range members {
		if m != nil && (m.Ref != "" && m.Ref == ref || value != nil && m.Value == value) {
			return i
		}
	}
	if ref == "" || strings.ContainsAny(ref, "/#") {
		return -1
	}
	for i, m := range members {
		if m != nil && m.Ref == "#/components/schemas/"+ref {
			return i
		}
	}
	return -1
}

// jsonKinds lists the JSON types a schema accepts; nil for any.
func jsonKinds(s *openapi3.Schema, depth int) []string {
	if s == nil || depth > 8 {
		return nil
	}
	var out []string
	add := func(k string) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	types, _ := typesOf(s)
	for _, t := range types {
		if t == openapi3.TypeInteger {
			t = openapi3.TypeNumber
		}
		add(t)
	}
	if len(out) > 0 {
		return out
	}
	switch {
	case isObjectish(s, types):
		return []string{openapi3.TypeObject}
	case s.Items != nil:
		return []string{openapi3.TypeArray}
	case len(s.Enum) > 0:
		for _, v := range s.Enum {
			switch v.(type) {
			case string:
				add(openapi3.TypeString)
			case float64, int, int64:
				add(openapi3.TypeNumber)
			case bool:
				add(openapi3.TypeBoolean)
			case map[string]any:
				add(openapi3.TypeObject)
			case []any:
				add(openapi3.TypeArray)
			}
		}
		return out
	}
	for kw, list := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
		for _, m := range list {
			if m == nil || m.Value == nil {
				continue
			}
			kinds := jsonKinds(m.Value, depth+1)
			if kinds == nil {
				if kw == 0 {
					continue // an allOf member that only constrains
				}
				return nil
			}
			for _, k := range kinds {
				add(k)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// addFields adds a field per property of s to struct t. seen maps JSON names
// to fields already added (allOf members restating a property).
func (b *builder) addFields(t *Type, s *openapi3.Schema, loc string, seen map[string]*Field) {
	if b.tb(t).fields == nil {
		b.tb(t).fields = b.names.scope("fields of "+t.Location, reservedNames[reservedTypeMembers]...)
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, pname := range sortedKeys(s.Properties) {
		pr := s.Properties[pname]
		ploc := loc + "/properties/" + jsonkit.EscapeToken(pname)
		if prev, ok := seen[pname]; ok {
			// allOf restating a property: keep the first, merge required.
			if required[pname] && !prev.Required {
				prev.Required = true
				b.fieldType(prev, b.fb(prev).baseType, b.fb(prev).baseNullable, t)
			}
			continue
		}
		want := goName(pname)
		f := &Field{JSONName: pname, Location: ploc, Required: required[pname]}
		seen[pname] = f
		b.names.fixed(b.tb(t).fields, &f.Name, want, ploc, "property", rankComponent, closeness(pname, want), true)
		gt, nullable := b.schemaType(pr, nameHint{parent: b.tb(t).ident, suffix: want}, ploc)
		if pr != nil && pr.Value != nil {
			eff, _, _, _ := unwrap(pr, "")
			f.ReadOnly = pr.Value.ReadOnly || eff.Value.ReadOnly
			f.WriteOnly = pr.Value.WriteOnly || eff.Value.WriteOnly
			f.Doc = firstLine(pr.Value.Description)
			if f.Doc == "" {
				f.Doc = firstLine(eff.Value.Description)
			}
			if d := pr.Value.Default; d != nil {
				f.Default = &Default{Value: d}
			} else if d := eff.Value.Default; d != nil {
				f.Default = &Default{Value: d}
			}
			if f.Default != nil {
				data, err := json.Marshal(f.Default.Value)
				if err != nil {
					b.errs.addf("%s: %s: default: %v", b.file, ploc, err)
				}
				f.Default.JSON = string(data)
				b.defaults = append(b.defaults, f)
			}
		}
		b.fieldType(f, gt, nullable, t)
		t.Fields = append(t.Fields, f)
	}
	// Required names that come from allOf members without the property.
	for _, f := range t.Fields {
		if required[f.JSONName] && !f.Required {
			f.Required = true
			b.fieldType(f, b.fb(f).baseType, b.fb(f).baseNullable, t)
		}
	}
	if len(s.Properties) > 0 && t.AdditionalProperties == nil {
		ap := s.AdditionalProperties
		if ap.Schema != nil || ap.Has != nil && *ap.Has {
			aloc := loc + "/additionalProperties"
			elem := GoType{Kind: GoAny}
			if ap.Schema != nil {
				var nullable bool
				elem, nullable = b.schemaType(ap.Schema, nameHint{parent: b.tb(t).ident, suffix: "Value"}, aloc)
				if nullable && !elem.nilable() {
					elem = ptr(elem)
				}
			}
			f := &Field{Location: aloc, Type: GoType{Kind: GoMap, Elem: &elem},
				Doc: "holds the members not declared in properties"}
			b.names.fixed(b.tb(t).fields, &f.Name, "AdditionalProperties", aloc, "additionalProperties", rankInline, exactWords, true)
			t.AdditionalProperties = f
		}
	}
}

// fieldType sets f.Type from the property's type: T when required, *T when
// optional or nullable, idemtype.Nullable[T] when optional and nullable; slices,
// maps and any stay as they are unless null must be told from absent. A
// writeOnly member is optional in Go (responses leave it out), and a type
// that is being declared is held through a pointer.
func (b *builder) fieldType(f *Field, gt GoType, nullable bool, owner *Type) {
	b.fb(f).baseType, b.fb(f).baseNullable, f.Nullable = gt, nullable, nullable
	required := f.Required && !f.WriteOnly
	recursive := gt.Kind == GoNamed && b.tb(gt.Named).building || gt.Kind == GoNamed && gt.Named == owner
	switch {
	case !required && nullable:
		if recursive {
			gt = ptr(gt)
		}
		f.Type = GoType{Kind: GoNullable, Elem: &gt}
	case gt.nilable() || gt.Kind == GoOrEmpty: // OrEmpty has an absent state of its own
		f.Type = gt
	case !required || nullable || recursive:
		f.Type = ptr(gt)
	default:
		f.Type = gt
	}
}

// typeDefaults sets the type of every default's value, now that inline
// types are shared.
func (b *builder) typeDefaults() {
	for _, f := range b.defaults {
		f.Default.Type = b.fb(f).baseType
	}
}

// markWriteOnly sets Type.WriteOnly on every type that reaches a writeOnly
// member through its fields, elements or variants.
func markWriteOnly(types []*Type) {
	for changed := true; changed; {
		changed = false
		for _, t := range types {
			if t.WriteOnly {
				continue
			}
			reach := false
			for _, f := range t.Fields {
				reach = reach || f.WriteOnly || f.Type.reachesWriteOnly()
			}
			if t.AdditionalProperties != nil {
				reach = reach || t.AdditionalProperties.Type.reachesWriteOnly()
			}
			for _, v := range t.Variants {
				reach = reach || v.Type.reachesWriteOnly()
			}
			if t.Kind == KindAlias {
				reach = t.Alias.reachesWriteOnly()
			}
			if reach {
				t.WriteOnly, changed = true, true
			}
		}
	}
}

// enumSuffixes names the constants of an enum's values: enumSuffix, but
// values that would share a name and differ in a sign before a digit
// (Etc/GMT+1 and Etc/GMT-1) spell their signs (EtcGMTPlus1, EtcGMTMinus1)
// rather than being numbered.
func enumSuffixes(vals []string) []string {
	out := make([]string, len(vals))
	count := map[string]int{}
	for i, v := range vals {
		out[i] = enumSuffix(v, false)
		count[out[i]]++
	}
	for i, v := range vals {
		if count[out[i]] > 1 {
			out[i] = enumSuffix(v, true)
		}
	}
	return out
}

func enumSuffix(v string, signs bool) string {
	n := goNameSigns(v, signs)
	if strings.HasPrefix(n, "X") && !strings.HasPrefix(strings.ToUpper(v), "X") {
		return n[1:] // a value starting with a digit: Status200 rather than StatusX200
	}
	return n
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
