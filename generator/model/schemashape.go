// Questions asked of an OpenAPI schema's shape while it is typed: its JSON
// types, whether it is a wrapper, a union, an enum, and the names of enum
// values.

package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
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

// nullOnly reports a schema that allows null and nothing else: `type:
// "null"` (or `type: [null]`), `enum: [null]`, and `const: null` (which the
// loader spells enum: [null], load.NullConsts). As a oneOf or anyOf member
// it is OpenAPI 3.1's way to make a union nullable.
func nullOnly(sr *openapi3.SchemaRef) bool {
	if sr == nil || sr.Value == nil {
		return false
	}
	s := sr.Value
	if len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 || len(s.Properties) > 0 || s.Items != nil ||
		s.AdditionalProperties.Schema != nil || s.Discriminator != nil {
		return false
	}
	if types, _ := typesOf(s); len(types) > 0 {
		return false
	}
	if len(s.Enum) > 0 {
		return !slices.ContainsFunc(s.Enum, func(v any) bool { return v != nil })
	}
	return s.Type.IncludesNull()
}

// nonNull returns the members of list that are not nullOnly, each with its
// index in list, and whether some member is nullOnly.
func nonNull(list openapi3.SchemaRefs) (members []member, nullable bool) {
	for i, m := range list {
		if nullOnly(m) {
			nullable = true
			continue
		}
		members = append(members, member{m, i})
	}
	return members, nullable
}

// member is a member of a oneOf or anyOf and its index there.
type member struct {
	sr *openapi3.SchemaRef
	i  int
}

// unwrap sees through the wrappers real specs put around a type:
// `allOf|anyOf|oneOf: [{$ref: X}]` (with nullable or a description beside
// it) is X; `anyOf|oneOf: [X, {type: "null"}]` is X, nullable (OpenAPI
// 3.1's nullable union, the null member in any place); `anyOf: [X, {enum:
// [""]}]` is X or the empty string (Stripe's way to unset a field). It
// returns the schema that types sr, its location relative to loc, whether a
// wrapper allowed null, and whether the empty string is allowed besides X.
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
			list, null := nonNull(l.list)
			if l.kw == "allOf" {
				list, null = nil, false
				for i, m := range l.list {
					list = append(list, member{m, i})
				}
			}
			switch {
			case len(l.list) == 0:
			case next != nil:
				return sr, loc, nullable, orEmpty // two keywords: not a wrapper
			case len(list) == 1:
				next, step = list[0].sr, fmt.Sprintf("/%s/%d", l.kw, list[0].i)
				nullable = nullable || null
			case len(list) == 2 && l.kw != "allOf" && isEmptyString(list[1].sr) != isEmptyString(list[0].sr):
				m := list[0]
				if isEmptyString(m.sr) {
					m = list[1]
				}
				next, step = m.sr, fmt.Sprintf("/%s/%d", l.kw, m.i)
				orEmpty, nullable = true, nullable || null
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

// unionMembers returns the members of a oneOf/anyOf that type a value, each
// with its index in the list kw names: nil when there is none, when every
// member is shapeless (they only constrain the properties beside them), or
// when every member is a string enum (the union is then one enum). A
// member that allows only null (nullOnly) types no value: it makes the
// union nullable (nullable).
func unionMembers(s *openapi3.Schema) (members []member, kw string, nullable bool) {
	list, kw := s.OneOf, "oneOf"
	if len(list) == 0 {
		list, kw = s.AnyOf, "anyOf"
	}
	members, nullable = nonNull(list)
	if len(members) == 0 || len(s.Properties) > 0 && !slices.ContainsFunc(members, func(m member) bool { return !shapeless(m.sr) }) {
		return nil, "", false
	}
	if len(unionEnum(s)) > 0 {
		return nil, "", false
	}
	return members, kw, nullable
}

// unionEnum returns the values of a oneOf/anyOf of string enums, in order
// (a member that allows only null makes the enum nullable).
func unionEnum(s *openapi3.Schema) []string {
	list := s.OneOf
	if len(list) == 0 {
		list = s.AnyOf
	}
	members, _ := nonNull(list)
	if len(members) == 0 {
		return nil
	}
	var out []string
	for _, mb := range members {
		m := mb.sr
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
	if m, _, _ := unionMembers(s); m != nil {
		return true
	}
	if len(s.AllOf) > 0 || len(stringEnum(s)) > 0 {
		return true
	}
	types, _ := typesOf(s)
	return isObjectish(s, types) && len(s.Properties) > 0
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
			if m == nil || m.Value == nil || kw > 0 && nullOnly(m) {
				continue // a member that allows only null types no value
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
