package generator

import (
	"fmt"
	"strconv"
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

// needsNamedType reports whether an inline schema becomes a named type.
func needsNamedType(s *openapi3.Schema) bool {
	types, _ := typesOf(s)
	if len(s.AllOf) > 0 || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return true
	}
	if len(types) == 1 && types[0] == openapi3.TypeString && len(stringEnum(s)) > 0 {
		return true
	}
	return isObjectish(s, types) && len(s.Properties) > 0
}

func stringEnum(s *openapi3.Schema) []string {
	var out []string
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			out = append(out, str)
		} else if v != nil {
			return nil
		}
	}
	return out
}

// goType returns the Go type of a schema; inline schemas that need a name get
// hint as their name.
func (b *builder) goType(sr *openapi3.SchemaRef, hint, loc string) GoType {
	if sr == nil || sr.Value == nil {
		return GoType{Kind: GoAny}
	}
	s := sr.Value
	if name, ok := b.bySchema[s]; ok {
		return GoType{Kind: GoNamed, Name: name}
	}
	if name, ok := b.byRef[sr.Ref]; ok && sr.Ref != "" {
		return GoType{Kind: GoNamed, Name: name}
	}
	if sr.Ref != "" && needsNamedType(s) {
		// A schema in another file or outside components: name it after the
		// last segment of its $ref.
		name := b.name(goName(sr.Ref[strings.LastIndexAny(sr.Ref, "/#")+1:]), sr.Ref)
		if !b.ns.claim(name, sr.Ref) {
			return GoType{Kind: GoAny}
		}
		b.bySchema[s] = name
		b.byRef[sr.Ref] = name
		b.declare(name, s, sr.Ref)
		return GoType{Kind: GoNamed, Name: name}
	}
	if needsNamedType(s) {
		hint = b.name(hint, loc)
		if !b.ns.claim(hint, loc) {
			return GoType{Kind: GoAny}
		}
		b.bySchema[s] = hint
		b.declare(hint, s, loc)
		return GoType{Kind: GoNamed, Name: hint}
	}
	return b.plainType(s, hint, loc)
}

// plainType is the Go type of a schema that needs no name of its own.
func (b *builder) plainType(s *openapi3.Schema, hint, loc string) GoType {
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
		case "uuid":
			return GoType{Kind: GoUUID}
		case "binary", "byte":
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
		elem := b.goType(s.Items, hint+"Item", loc+"/items")
		return GoType{Kind: GoSlice, Elem: &elem}
	case openapi3.TypeObject:
		ap := s.AdditionalProperties
		elem := GoType{Kind: GoAny}
		if ap.Schema != nil {
			elem = b.goType(ap.Schema, hint+"Value", loc+"/additionalProperties")
		}
		return GoType{Kind: GoMap, Elem: &elem}
	}
	return GoType{Kind: GoAny}
}

// declare builds the named type name for schema s.
func (b *builder) declare(name string, s *openapi3.Schema, loc string) {
	t := &Type{Name: name, Location: loc, Doc: firstLine(s.Description)}
	b.types[name] = t
	b.building[name] = true
	defer delete(b.building, name)
	types, _ := typesOf(s)
	switch {
	case len(s.AllOf) > 0:
		t.Kind = KindStruct
		seen := map[string]string{}
		var walk func(s *openapi3.Schema, loc string)
		walk = func(s *openapi3.Schema, loc string) {
			for i, sub := range s.AllOf {
				if sub != nil && sub.Value != nil {
					subloc := loc + "/allOf/" + strconv.Itoa(i)
					if sub.Ref != "" {
						subloc = sub.Ref
					}
					walk(sub.Value, subloc)
				}
			}
			b.addFields(t, s, loc, seen)
		}
		walk(s, loc)
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		t.Kind = KindUnion
		members, kw := s.OneOf, "oneOf"
		if len(members) == 0 {
			members, kw = s.AnyOf, "anyOf"
		}
		used := map[string]bool{}
		for i, m := range members {
			gt := b.goType(m, fmt.Sprintf("%sVariant%d", name, i+1), fmt.Sprintf("%s/%s/%d", loc, kw, i))
			vname := variantName(gt)
			if vname == "" || used[vname] {
				vname = fmt.Sprintf("Variant%d", i+1)
			}
			used[vname] = true
			b.ns.claim(name+"From"+vname, fmt.Sprintf("%s/%s/%d", loc, kw, i))
			t.Variants = append(t.Variants, Variant{Name: vname, Type: gt})
		}
	case len(types) == 1 && types[0] == openapi3.TypeString && len(stringEnum(s)) > 0:
		t.Kind = KindEnum
		for _, v := range stringEnum(s) {
			cname := name + enumSuffix(v)
			if b.ns.claim(cname, fmt.Sprintf("%s enum value %q", loc, v)) {
				t.Enum = append(t.Enum, EnumValue{Name: cname, Value: v})
			}
		}
	case isObjectish(s, types) && len(s.Properties) > 0:
		t.Kind = KindStruct
		b.addFields(t, s, loc, map[string]string{})
	default:
		t.Kind = KindAlias
		t.Alias = b.plainType(s, name, loc)
	}
}

func (b *builder) addFields(t *Type, s *openapi3.Schema, loc string, seen map[string]string) {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, pname := range sortedKeys(s.Properties) {
		pr := s.Properties[pname]
		ploc := loc + "/properties/" + pname
		fname := goName(pname)
		if prev, ok := seen[fname]; ok {
			if prev == pname { // allOf restating a property: keep the first, merge required
				for _, f := range t.Fields {
					if f.JSONName == pname && required[pname] && !f.Required {
						f.Required = true
						if f.Type.Kind == GoPointer {
							f.Type = *f.Type.Elem
						}
					}
				}
				continue
			}
			b.errs.addf("%s: Go field %s.%s is generated for both properties %q and %q (%s)", b.file, t.Name, fname, prev, pname, loc)
			continue
		}
		seen[fname] = pname
		gt := b.goType(pr, t.Name+fname, ploc)
		nullable := false
		if pr != nil && pr.Value != nil {
			_, nullable = typesOf(pr.Value)
		}
		req := required[pname]
		if (!req || nullable || b.building[gt.Name]) && !gt.nilable() {
			gt = ptr(gt)
		}
		doc := ""
		if pr != nil && pr.Value != nil {
			doc = firstLine(pr.Value.Description)
		}
		t.Fields = append(t.Fields, &Field{Name: fname, JSONName: pname, Type: gt, Required: req, Doc: doc})
	}
	// Required names that come from allOf members without the property.
	for _, f := range t.Fields {
		if required[f.JSONName] && !f.Required {
			f.Required = true
		}
	}
}

func variantName(t GoType) string {
	switch t.Kind {
	case GoNamed:
		return t.Name
	case GoBuiltin:
		return goName(t.Name)
	case GoTime:
		return "Time"
	case GoUUID:
		return "UUID"
	case GoBytes:
		return "Bytes"
	case GoSlice:
		if n := variantName(*t.Elem); n != "" {
			return n + "List"
		}
	case GoMap:
		if n := variantName(*t.Elem); n != "" {
			return n + "Map"
		}
	}
	return ""
}

func enumSuffix(v string) string {
	if v == "" {
		return "Empty"
	}
	n := goName(v)
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
