package generator

import (
	"fmt"
	"strconv"
	"strings"
)

const implPkgPath = "github.com/idemgen/idemgen/runtime/idemimpl"

// literal prints a runtime table entry of the model as a Go composite
// literal without its type name (the template prints the type), naming the
// runtime's identifiers through the importer: {{literal .}} on a
// *ReqSchema, *Param, *BodyMedia, *SecurityScheme, SecurityRequirement,
// PathSegment, *RequestLimits or []ResponseHeaderSet.
func literal(im *importer, v any) (string, error) {
	impl := func(name string) string { return importRef{im, implPkgPath}.String() + "." + name }
	switch v := v.(type) {
	case *ReqSchema:
		return schemaLiteral(v, impl), nil
	case *Param:
		return paramLiteral(v, impl), nil
	case *BodyMedia:
		return mediaLiteral(v, impl), nil
	case *SecurityScheme:
		return schemeLiteral(v, impl), nil
	case SecurityRequirement:
		return requirementLiteral(v), nil
	case PathSegment:
		return segmentLiteral(v), nil
	case *RequestLimits:
		return fmt.Sprintf("{MaxDepth: %d, MaxFields: %d, MaxNameLength: %d, MaxValues: %d}", v.MaxDepth, v.MaxFields, v.MaxNameLength, v.MaxValues), nil
	case []ResponseHeaderSet:
		return responseHeadersLiteral(v), nil
	}
	return "", fmt.Errorf("literal: no literal for %T", v)
}

// quoted is a []string literal's elements: "a", "b".
func quoted(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

func ints(xs []int) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Itoa(x)
	}
	return strings.Join(q, ", ")
}

// qualified joins constant names, each through impl: impl.A|impl.B.
func qualified(names []string, impl func(string) string, sep string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = impl(n)
	}
	return strings.Join(q, sep)
}

// schemaLiteral prints an idemimpl.Schema: {Types: idemimpl.TypeString}.
func schemaLiteral(e *ReqSchema, impl func(string) string) string {
	var f []string
	add := func(name, value string) { f = append(f, name+": "+value) }
	has := func(h string) bool {
		for _, x := range e.Has {
			if x == h {
				return true
			}
		}
		return false
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	if len(e.Has) > 0 {
		add("Has", qualified(e.Has, impl, "|"))
	}
	if len(e.Types) > 0 {
		add("Types", qualified(e.Types, impl, "|"))
	}
	if e.Nullable {
		add("Nullable", "true")
	}
	if e.Format != "" {
		add("Format", impl(e.Format))
	}
	if len(e.Enum) > 0 {
		add("Enum", "[]string{"+quoted(e.Enum)+"}")
	}
	if has("HasMinimum") {
		add("Minimum", strconv.Quote(e.Minimum))
		if e.ExclusiveMinimum {
			add("ExclusiveMinimum", "true")
		}
	}
	if has("HasMaximum") {
		add("Maximum", strconv.Quote(e.Maximum))
		if e.ExclusiveMaximum {
			add("ExclusiveMaximum", "true")
		}
	}
	if has("HasMultipleOf") {
		add("MultipleOf", strconv.Quote(e.MultipleOf))
	}
	if has("HasMinLength") {
		add("MinLength", u(e.MinLength))
	}
	if has("HasMaxLength") {
		add("MaxLength", u(e.MaxLength))
	}
	if e.Pattern != "" {
		add("Pattern", strconv.Quote(e.Pattern))
	}
	if has("HasMinItems") {
		add("MinItems", u(e.MinItems))
	}
	if has("HasMaxItems") {
		add("MaxItems", u(e.MaxItems))
	}
	if e.UniqueItems {
		add("UniqueItems", "true")
	}
	if has("HasMinProperties") {
		add("MinProperties", u(e.MinProperties))
	}
	if has("HasMaxProperties") {
		add("MaxProperties", u(e.MaxProperties))
	}
	if e.Items != 0 {
		add("Items", strconv.Itoa(e.Items))
	}
	if len(e.Props) > 0 {
		props := make([]string, len(e.Props))
		for i, p := range e.Props {
			props[i] = fmt.Sprintf("{Name: %s, Schema: %d", strconv.Quote(p.Name), p.Schema)
			if p.Required {
				props[i] += ", Required: true"
			}
			props[i] += "}"
		}
		add("Props", "[]"+impl("Prop")+"{"+strings.Join(props, ", ")+"}")
	}
	switch {
	case e.AdditionalConst != "":
		add("AdditionalProperties", impl(e.AdditionalConst))
	case e.AdditionalProperties != 0:
		add("AdditionalProperties", strconv.Itoa(e.AdditionalProperties))
	}
	for _, c := range []struct {
		kw  string
		idx []int
	}{{"AllOf", e.AllOf}, {"AnyOf", e.AnyOf}, {"OneOf", e.OneOf}} {
		if len(c.idx) > 0 {
			add(c.kw, "[]int{"+ints(c.idx)+"}")
		}
	}
	if e.Discriminator != "" {
		add("Discriminator", strconv.Quote(e.Discriminator))
		if len(e.Mapping) > 0 {
			ms := make([]string, len(e.Mapping))
			for i, m := range e.Mapping {
				ms[i] = fmt.Sprintf("{Value: %s, Schema: %d}", strconv.Quote(m.Value), m.Schema)
			}
			add("Mapping", "[]"+impl("Mapping")+"{"+strings.Join(ms, ", ")+"}")
		}
	}
	if e.Not != 0 {
		add("Not", strconv.Itoa(e.Not))
	}
	if e.Default != "" {
		add("Default", strconv.Quote(e.Default))
	}
	if e.ReadOnly {
		add("ReadOnly", "true")
	}
	if e.NoValidate {
		add("NoValidate", "true")
	}
	return "{" + strings.Join(f, ", ") + "}"
}

// paramLiteral prints an idemimpl.Param.
func paramLiteral(p *Param, impl func(string) string) string {
	s := fmt.Sprintf("{In: %s, Name: %s, Key: %s", strconv.Quote(p.In), strconv.Quote(p.Name), strconv.Quote(p.Key))
	if p.Schema != 0 {
		s += fmt.Sprintf(", Schema: %d", p.Schema)
	}
	s += ", Style: " + impl(p.Style)
	if p.Explode {
		s += ", Explode: true"
	}
	if p.Required {
		s += ", Required: true"
	}
	if p.Fingerprint {
		s += ", Fingerprint: true"
	}
	return s + "}"
}

// mediaLiteral prints an idemimpl.Media.
func mediaLiteral(m *BodyMedia, impl func(string) string) string {
	s := fmt.Sprintf("{Type: %s, Decode: %s", strconv.Quote(m.Type), impl(m.Decode))
	if m.Schema != 0 {
		s += fmt.Sprintf(", Schema: %d", m.Schema)
	}
	for _, l := range []struct {
		field string
		names []string
	}{{"Unexploded", m.Unexploded}, {"JSONParts", m.JSONParts}, {"FormParts", m.FormParts}} {
		if len(l.names) > 0 {
			s += ", " + l.field + ": []string{" + quoted(l.names) + "}"
		}
	}
	return s + "}"
}

// schemeLiteral prints an idemimpl.Scheme.
func schemeLiteral(s *SecurityScheme, impl func(string) string) string {
	out := fmt.Sprintf("{Name: %s, Kind: %s", strconv.Quote(s.Name), impl(s.Kind))
	if s.Param != "" {
		out += ", Param: " + strconv.Quote(s.Param)
	}
	if s.Challenge != "" {
		out += ", Challenge: " + strconv.Quote(s.Challenge)
	}
	return out + "}"
}

// requirementLiteral prints an idemimpl.Requirement; its schemes are
// entries of the generated securitySchemes.
func requirementLiteral(r SecurityRequirement) string {
	parts := make([]string, len(r))
	for i, u := range r {
		p := fmt.Sprintf("{Scheme: &securitySchemes[%d]", u.Scheme.Index)
		if len(u.Scopes) > 0 {
			p += ", Scopes: []string{" + quoted(u.Scopes) + "}"
		}
		parts[i] = p + "}"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// segmentLiteral prints an idemimpl.PathSegment.
func segmentLiteral(s PathSegment) string {
	if len(s.Params) == 0 {
		return fmt.Sprintf("{Wildcard: %s, Literals: []string{%s}}", strconv.Quote(s.Wildcard), quoted(s.Literals))
	}
	return fmt.Sprintf("{Wildcard: %s, Literals: []string{%s}, Params: []string{%s}}", strconv.Quote(s.Wildcard), quoted(s.Literals), quoted(s.Params))
}

// responseHeadersLiteral prints idem.Operation.ResponseHeaders.
func responseHeadersLiteral(sets []ResponseHeaderSet) string {
	var b strings.Builder
	b.WriteString("map[string][]string{")
	for i, sh := range sets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(sh.Status) + ": ")
		if len(sh.Names) == 0 {
			b.WriteString("nil")
			continue
		}
		b.WriteString("{" + quoted(sh.Names) + "}")
	}
	b.WriteString("}")
	return b.String()
}

// schemeParams is the parameter list of a scheme's Security method after
// ctx, and schemeArgs the arguments the generated hook passes from c, an
// *idemimpl.Credential.
func schemeParams(im *importer, s *SecurityScheme) string {
	switch s.Kind {
	case "SchemeBasic":
		return "username, password string"
	case "SchemeMutualTLS":
		return "chain []*" + importRef{im, "crypto/x509"}.String() + ".Certificate"
	case "SchemeBearer":
		return "token string"
	case "SchemeHTTP":
		return "credentials string"
	}
	return "key string"
}

func schemeArgs(s *SecurityScheme) string {
	switch s.Kind {
	case "SchemeBasic":
		return "c.Username, c.Password"
	case "SchemeMutualTLS":
		return "c.Certificates"
	}
	return "c.Value"
}

// String renders the type as Go source with the packages' usual names (for
// comments and messages; templates print types with goType, which records
// the imports).
func (t GoType) String() string {
	switch t.Kind {
	case GoAny:
		return "any"
	case GoBuiltin:
		return t.Name
	case GoNamed:
		return t.TypeName()
	case GoTime:
		return "time.Time"
	case GoUUID:
		return "uuid.UUID"
	case GoDate:
		return "idemtype.Date"
	case GoBytes:
		return "[]byte"
	case GoReader:
		return "io.Reader"
	case GoFile:
		return "idemtype.File"
	case GoSlice:
		return "[]" + t.Elem.String()
	case GoMap:
		return "map[string]" + t.Elem.String()
	case GoPointer:
		return "*" + t.Elem.String()
	case GoNullable:
		return "idemtype.Nullable[" + t.Elem.String() + "]"
	case GoOrEmpty:
		return "idemtype.OrEmpty[" + t.Elem.String() + "]"
	}
	return "any"
}

// Go is the default value as a Go expression of its type: `int64(10)`,
// `"eur"`, `PetStatusAvailable`; "" when the value has none (objects,
// arrays): decode its JSON instead.
func (d *Default) Go() string { return goLiteral(d.Type, d.Value) }

// goLiteral spells v as a Go expression of type t; "" when it cannot.
func goLiteral(t GoType, v any) string {
	switch t.Kind {
	case GoBuiltin:
		switch x := v.(type) {
		case string:
			if t.Name == "string" {
				return strconv.Quote(x)
			}
		case bool:
			if t.Name == "bool" {
				return strconv.FormatBool(x)
			}
		case float64:
			switch t.Name {
			case "int32", "int64":
				if x == float64(int64(x)) {
					return t.Name + "(" + strconv.FormatInt(int64(x), 10) + ")"
				}
			case "float32", "float64":
				return t.Name + "(" + strconv.FormatFloat(x, 'g', -1, 64) + ")"
			}
		}
	case GoNamed:
		nt := t.Named
		switch nt.Kind {
		case KindEnum:
			for _, e := range nt.Enum {
				if e.Value == v {
					return e.Name
				}
			}
		case KindAlias:
			return goLiteral(nt.Alias, v)
		}
	}
	return ""
}
