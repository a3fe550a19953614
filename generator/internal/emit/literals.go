package emit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// literal prints a runtime table entry of the model as a Go composite
// literal without its type name (the template prints the type), naming the
// runtime's identifiers through the importer: {{literal .}} on a
// *ReqSchema, *Param, *BodyMedia, *SecurityScheme, SecurityRequirement,
// PathSegment, *RequestLimits or []ResponseHeaderSet.
func literal(im *importer, v any) (string, error) {
	p := &runtimePrinter{im: im}
	var out string
	switch v := v.(type) {
	case *model.ReqSchema:
		out = schemaLiteral(v, p)
	case *model.Param:
		out = paramLiteral(v, p)
	case *model.BodyMedia:
		out = mediaLiteral(v, p)
	case *model.SecurityScheme:
		out = schemeLiteral(v, p)
	case model.SecurityRequirement:
		out = requirementLiteral(v)
	case model.PathSegment:
		out = segmentLiteral(v)
	case *model.RequestLimits:
		out = fmt.Sprintf("{MaxDepth: %d, MaxFields: %d, MaxNameLength: %d, MaxValues: %d}", v.MaxDepth, v.MaxFields, v.MaxNameLength, v.MaxValues)
	case []model.ResponseHeaderSet:
		out = responseHeadersLiteral(v)
	default:
		return "", fmt.Errorf("literal: no literal for %T", v)
	}
	if p.err != nil {
		return "", fmt.Errorf("literal: %w", p.err)
	}
	return out, nil
}

// runtimePrinter names the runtime's identifiers in a literal through the
// importer; err is the first constant it had no name for.
type runtimePrinter struct {
	im  *importer
	err error
}

// impl is idemimpl's identifier name, qualified.
func (p *runtimePrinter) impl(name string) string {
	return importRef{p.im, implPkg}.String() + "." + name
}

// constant is runtime constant v (runtimeNames), qualified.
func (p *runtimePrinter) constant(v any) string {
	id, err := runtimeName(v)
	if err != nil {
		if p.err == nil {
			p.err = err
		}
		return ""
	}
	return importRef{p.im, id.path}.String() + "." + id.name
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

// constants joins runtime constants, each qualified: impl.A|impl.B.
func constants[T any](p *runtimePrinter, vs []T, sep string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = p.constant(v)
	}
	return strings.Join(q, sep)
}

// bits are the flags of set, in the order of their bits.
func bits[T ~uint8 | ~uint16](set T) []T {
	var out []T
	for b := T(1); b != 0 && b <= set; b <<= 1 {
		if set&b != 0 {
			out = append(out, b)
		}
	}
	return out
}

// schemaLiteral prints an idemimpl.Schema: {Types: idemimpl.TypeString}.
func schemaLiteral(e *model.ReqSchema, p *runtimePrinter) string {
	var f []string
	add := func(name, value string) { f = append(f, name+": "+value) }
	has := func(h idemimpl.Has) bool { return e.Has&h != 0 }
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	if e.Has != 0 {
		add("Has", constants(p, bits(e.Has), "|"))
	}
	if len(e.Types) > 0 {
		add("Types", constants(p, e.Types, "|"))
	}
	if e.Nullable {
		add("Nullable", "true")
	}
	if e.Format != idemimpl.FormatNone {
		add("Format", p.constant(e.Format))
	}
	if len(e.Enum) > 0 {
		add("Enum", "[]string{"+quoted(e.Enum)+"}")
	}
	if has(idemimpl.HasMinimum) {
		add("Minimum", strconv.Quote(e.Minimum))
		if e.ExclusiveMinimum {
			add("ExclusiveMinimum", "true")
		}
	}
	if has(idemimpl.HasMaximum) {
		add("Maximum", strconv.Quote(e.Maximum))
		if e.ExclusiveMaximum {
			add("ExclusiveMaximum", "true")
		}
	}
	if has(idemimpl.HasMultipleOf) {
		add("MultipleOf", strconv.Quote(e.MultipleOf))
	}
	if has(idemimpl.HasMinLength) {
		add("MinLength", u(e.MinLength))
	}
	if has(idemimpl.HasMaxLength) {
		add("MaxLength", u(e.MaxLength))
	}
	if e.Pattern != "" {
		add("Pattern", strconv.Quote(e.Pattern))
	}
	if has(idemimpl.HasMinItems) {
		add("MinItems", u(e.MinItems))
	}
	if has(idemimpl.HasMaxItems) {
		add("MaxItems", u(e.MaxItems))
	}
	if e.UniqueItems {
		add("UniqueItems", "true")
	}
	if has(idemimpl.HasMinProperties) {
		add("MinProperties", u(e.MinProperties))
	}
	if has(idemimpl.HasMaxProperties) {
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
		add("Props", "[]"+p.impl("Prop")+"{"+strings.Join(props, ", ")+"}")
	}
	switch {
	case e.AdditionalProperties < 0:
		add("AdditionalProperties", p.constant(additional(e.AdditionalProperties)))
	case e.AdditionalProperties > 0:
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
			add("Mapping", "[]"+p.impl("Mapping")+"{"+strings.Join(ms, ", ")+"}")
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
func paramLiteral(p *model.Param, rt *runtimePrinter) string {
	s := fmt.Sprintf("{In: %s, Name: %s, Key: %s", strconv.Quote(p.In), strconv.Quote(p.Name), strconv.Quote(p.Key))
	if p.Schema != 0 {
		s += fmt.Sprintf(", Schema: %d", p.Schema)
	}
	s += ", Style: " + rt.constant(p.Style)
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
func mediaLiteral(m *model.BodyMedia, p *runtimePrinter) string {
	s := fmt.Sprintf("{Type: %s, Decode: %s", strconv.Quote(m.Type), p.constant(m.Decode))
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
func schemeLiteral(s *model.SecurityScheme, p *runtimePrinter) string {
	out := fmt.Sprintf("{Name: %s, Kind: %s", strconv.Quote(s.Name), p.constant(s.Kind))
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
func requirementLiteral(r model.SecurityRequirement) string {
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
func segmentLiteral(s model.PathSegment) string {
	if len(s.Params) == 0 {
		return fmt.Sprintf("{Wildcard: %s, Literals: []string{%s}}", strconv.Quote(s.Wildcard), quoted(s.Literals))
	}
	return fmt.Sprintf("{Wildcard: %s, Literals: []string{%s}, Params: []string{%s}}", strconv.Quote(s.Wildcard), quoted(s.Literals), quoted(s.Params))
}

// responseHeadersLiteral prints idem.Operation.ResponseHeaders.
func responseHeadersLiteral(sets []model.ResponseHeaderSet) string {
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
func schemeParams(im *importer, s *model.SecurityScheme) string {
	switch s.Kind {
	case idemimpl.SchemeBasic:
		return "username, password string"
	case idemimpl.SchemeMutualTLS:
		return "chain []*" + importRef{im, "crypto/x509"}.String() + ".Certificate"
	case idemimpl.SchemeBearer:
		return "token string"
	case idemimpl.SchemeHTTP:
		return "credentials string"
	}
	return "key string"
}

// headerParser is the idemimpl function that parses a response header's
// value (its element's, when the field is a pointer): idemimpl.ParseInt64,
// idemimpl.ParseEnum[Status]; types qualifies the package's types ("" or
// "api.").
func headerParser(im *importer, h *model.Header, types string) (string, error) {
	t := h.Type
	if t.Kind == model.GoPointer {
		t = *t.Elem
	}
	for t.Kind == model.GoNamed && t.Named.Kind == model.KindAlias {
		t = t.Named.Alias
	}
	name := map[model.GoKind]string{model.GoTime: "ParseTime", model.GoUUID: "ParseUUID", model.GoDate: "ParseDate"}[t.Kind]
	switch {
	case t.Kind == model.GoBuiltin:
		name = map[string]string{"string": "ParseString", "bool": "ParseBool", "int32": "ParseInt32", "int64": "ParseInt64",
			"float32": "ParseFloat32", "float64": "ParseFloat64"}[t.Name]
	case t.Kind == model.GoNamed && t.Named.Kind == model.KindEnum:
		name = "ParseEnum[" + types + t.Named.Name + "]"
	}
	if name == "" {
		return "", fmt.Errorf("headerParser: header %s: no parser for its type", h.Name)
	}
	return importRef{im, implPkg}.String() + "." + name, nil
}

func schemeArgs(s *model.SecurityScheme) string {
	switch s.Kind {
	case idemimpl.SchemeBasic:
		return "c.Username, c.Password"
	case idemimpl.SchemeMutualTLS:
		return "c.Certificates"
	}
	return "c.Value"
}

// goLiteral spells v as a Go expression of type t; "" when it cannot.
func goLiteral(t model.GoType, v any) string {
	switch t.Kind {
	case model.GoBuiltin:
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
	case model.GoNamed:
		nt := t.Named
		switch nt.Kind {
		case model.KindEnum:
			for _, e := range nt.Enum {
				if e.Value == v {
					return e.Name
				}
			}
		case model.KindAlias:
			return goLiteral(nt.Alias, v)
		}
	}
	return ""
}

// describeSecurity says alternatives in words: "apiKey and bearerAuth, or
// basicAuth, or anonymous".
func describeSecurity(alts []model.SecurityRequirement) string {
	words := make([]string, len(alts))
	for i, alt := range alts {
		if len(alt) == 0 {
			words[i] = "anonymous"
			continue
		}
		names := make([]string, len(alt))
		for j, u := range alt {
			names[j] = u.Scheme.Name
			if len(u.Scopes) > 0 {
				names[j] += " (" + strings.Join(u.Scopes, " ") + ")"
			}
		}
		words[i] = strings.Join(names, " and ")
	}
	return strings.Join(words, ", or ")
}
