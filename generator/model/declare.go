// Declaring the named types: their fields, union variants, defaults and
// writeOnly reach, once a schema has been given a type (schema.go).

package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/reserved"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

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
	if members, kw, _ := unionMembers(s); members != nil {
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

// declareUnion makes t a struct with one pointer field per member (a
// member that allows only null has none: the union is nullable, and its
// users' fields say so).
func (b *builder) declareUnion(t *Type, list []member, kw string) {
	t.Kind = KindUnion
	fields := b.names.scope("fields of union "+t.Location, b.typeMembers()...)
	s, loc := b.tb(t).schema, t.Location
	var members openapi3.SchemaRefs
	for _, mb := range list {
		members = append(members, mb.sr)
	}
	for i, mb := range list {
		m, mloc := mb.sr, fmt.Sprintf("%s/%s/%d", loc, kw, mb.i)
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
			b.warnf(diag.WarnRefused, loc, "discriminator mapping %q: %s is not a member of the %s; the value is refused", value, target.Ref, kw)
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

// addFields adds a field per property of s to struct t. seen maps JSON names
// to fields already added (allOf members restating a property).
func (b *builder) addFields(t *Type, s *openapi3.Schema, loc string, seen map[string]*Field) {
	if b.tb(t).fields == nil {
		b.tb(t).fields = b.names.scope("fields of "+t.Location, b.typeMembers()...)
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
				reach = reach || f.WriteOnly || f.Type.ReachesWriteOnly()
			}
			if t.AdditionalProperties != nil {
				reach = reach || t.AdditionalProperties.Type.ReachesWriteOnly()
			}
			for _, v := range t.Variants {
				reach = reach || v.Type.ReachesWriteOnly()
			}
			if t.Kind == KindAlias {
				reach = t.Alias.ReachesWriteOnly()
			}
			if reach {
				t.WriteOnly, changed = true, true
			}
		}
	}
}

// typeMembers are the method names no field of a generated struct or union
// may take.
func (b *builder) typeMembers() []string {
	if b.split {
		return append(slices.Clone(reserved.Names[reserved.TypeMembers]), reserved.Names[reserved.SplitTypeMembers]...)
	}
	return reserved.Names[reserved.TypeMembers]
}
