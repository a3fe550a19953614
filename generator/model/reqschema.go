package model

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/suggest"
	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// reqTable builds the Schemas table. Index 0 is the schema that allows any
// value.
type reqTable struct {
	b     *builder
	list  []*ReqSchema
	byKey map[reqKey]int
	// byKeywords shares the entries of schemas without subschemas.
	byKeywords map[string]int
	// schemas and noValidate are what each entry was built from.
	schemas    []*openapi3.Schema
	noValidate []bool
	// skip holds the spec locations (schemas, properties, operations)
	// whose validation the config turns off; used those that matched.
	skip, used map[string]bool
}

type reqKey struct {
	s          *openapi3.Schema
	noValidate bool
}

func newReqTable(b *builder, skip []string) *reqTable {
	t := &reqTable{b: b, byKey: map[reqKey]int{}, byKeywords: map[string]int{}, skip: map[string]bool{}, used: map[string]bool{}}
	for _, s := range skip {
		t.skip[s] = true
	}
	t.list = append(t.list, &ReqSchema{Index: 0, Source: "any value"})
	t.schemas, t.noValidate = append(t.schemas, nil), append(t.noValidate, false)
	return t
}

// index returns the table index of the schema sr found at loc, building its
// entry (and those of the schemas it refers to) once.
func (t *reqTable) index(sr *openapi3.SchemaRef, loc string, noValidate bool) int {
	if sr == nil || sr.Value == nil {
		return 0
	}
	switch c := t.b.refCopy(sr); {
	case c != nil && c.docOnly:
		sr, loc = c.target, sr.Ref // validated as the schema it refers to
	case c != nil:
		// The referenced schema and its siblings, where the $ref stands.
	case sr.Ref != "":
		loc = sr.Ref
	}
	if t.skip[loc] {
		noValidate = true
		t.used[loc] = true
	}
	key := reqKey{sr.Value, noValidate}
	if i, ok := t.byKey[key]; ok {
		return i
	}
	if leaf(sr.Value) {
		// Schemas without subschemas are shared by their keywords: Stripe
		// has thousands of {Types: TypeString, MaxLength: 5000}.
		e := &ReqSchema{Source: loc}
		t.fill(e, sr.Value, loc, noValidate)
		k := e.key()
		if i, ok := t.byKeywords[k]; ok {
			t.byKey[key] = i
			return i
		}
		e.Index = len(t.list)
		t.list = append(t.list, e)
		t.schemas, t.noValidate = append(t.schemas, sr.Value), append(t.noValidate, noValidate)
		t.byKey[key], t.byKeywords[k] = e.Index, e.Index
		return e.Index
	}
	e := &ReqSchema{Index: len(t.list), Source: loc}
	t.list = append(t.list, e)
	t.schemas, t.noValidate = append(t.schemas, sr.Value), append(t.noValidate, noValidate)
	t.byKey[key] = e.Index
	t.fill(e, sr.Value, loc, noValidate)
	return e.Index
}

// leaf reports whether s has no subschemas.
func leaf(s *openapi3.Schema) bool {
	return s.Items == nil && len(s.Properties) == 0 && s.AdditionalProperties.Schema == nil &&
		len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) == 0 && s.Not == nil
}

// fill sets e's keywords from schema s.
func (t *reqTable) fill(e *ReqSchema, s *openapi3.Schema, loc string, noValidate bool) {
	types, nullable := typesOf(s)
	for _, ty := range types {
		c, ok := jsonTypes[ty]
		if !ok {
			t.b.errs.addf("%s: %s: type %q is not one of %s%s", t.b.file, loc, ty, strings.Join(sortedKeys(jsonTypes), ", "), suggest.DidYouMean(ty, sortedKeys(jsonTypes)))
			continue
		}
		e.Types = append(e.Types, c)
	}
	switch {
	case nullable && len(types) > 0, len(types) == 0 && s.Type.IncludesNull():
		// `type: "null"` alone allows null and nothing else; `nullable:
		// true` without a type (OpenAPI 3.0) adds null to any value.
		e.Types = append(e.Types, idemimpl.TypeNull)
	default:
		e.Nullable = nullable && len(types) == 0
	}
	e.Format = formatConst(s.Format, types)
	var enum []string
	for _, v := range s.Enum {
		enum = append(enum, canonicalJSON(v))
	}
	if s.Const != nil {
		enum = []string{canonicalJSON(s.Const)}
	}
	if !noValidate {
		e.Enum = enum
	}
	min, exclMin := s.Min, s.ExclusiveMin.IsTrue()
	if v := s.ExclusiveMin.Value; v != nil && (min == nil || *v >= *min) {
		min, exclMin = v, true
	}
	max, exclMax := s.Max, s.ExclusiveMax.IsTrue()
	if v := s.ExclusiveMax.Value; v != nil && (max == nil || *v <= *max) {
		max, exclMax = v, true
	}
	if min != nil {
		e.Has |= idemimpl.HasMinimum
		e.Minimum, e.ExclusiveMinimum = decimal(*min), exclMin
	}
	if max != nil {
		e.Has |= idemimpl.HasMaximum
		e.Maximum, e.ExclusiveMaximum = decimal(*max), exclMax
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		e.Has |= idemimpl.HasMultipleOf
		e.MultipleOf = decimal(*s.MultipleOf)
	}
	if s.MinLength > 0 {
		e.Has |= idemimpl.HasMinLength
		e.MinLength = s.MinLength
	}
	if s.MaxLength != nil {
		e.Has |= idemimpl.HasMaxLength
		e.MaxLength = *s.MaxLength
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			t.b.warnf(diag.WarnTyped, loc, "pattern %q is not enforced: Go's regexp (RE2 syntax) cannot compile it: %v", s.Pattern, err)
		} else {
			e.Pattern = s.Pattern
		}
	}
	if s.MinItems > 0 {
		e.Has |= idemimpl.HasMinItems
		e.MinItems = s.MinItems
	}
	if s.MaxItems != nil {
		e.Has |= idemimpl.HasMaxItems
		e.MaxItems = *s.MaxItems
	}
	e.UniqueItems = s.UniqueItems
	if s.MinProps > 0 {
		e.Has |= idemimpl.HasMinProperties
		e.MinProperties = s.MinProps
	}
	if s.MaxProps != nil {
		e.Has |= idemimpl.HasMaxProperties
		e.MaxProperties = *s.MaxProps
	}
	if s.Items != nil {
		e.Items = t.index(s.Items, loc+"/items", noValidate)
	}
	if len(s.Properties) > 0 || len(s.Required) > 0 {
		// A required member the schema does not declare (a oneOf member
		// that is only `required: [id]`) is a property of any value.
		required := map[string]bool{}
		names := sortedKeys(s.Properties)
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok && !required[r] {
				names = append(names, r)
			}
			required[r] = true
		}
		sort.Strings(names)
		for _, name := range names {
			idx := 0
			if ps, ok := s.Properties[name]; ok {
				idx = t.index(ps, loc+"/properties/"+jsonkit.EscapeToken(name), noValidate)
			}
			e.Props = append(e.Props, ReqProp{Name: name, Schema: idx, Required: required[name]})
		}
	}
	if ap := s.AdditionalProperties; ap.Has != nil && !*ap.Has {
		e.AdditionalProperties = idemimpl.NoAdditional
	} else if i := t.index(ap.Schema, loc+"/additionalProperties", noValidate); i > 0 {
		e.AdditionalProperties = i
	} else if (ap.Schema != nil || ap.Has != nil) && len(s.Properties) > 0 {
		// Declared beside properties: the typed request keeps undeclared
		// members in its AdditionalProperties map. Without the keyword it
		// drops them, and so does the decoded request (idemimpl's prune).
		e.AdditionalProperties = idemimpl.AnyAdditional
	}
	for _, c := range []struct {
		kw   string
		refs openapi3.SchemaRefs
		dst  *[]int
	}{{"allOf", s.AllOf, &e.AllOf}, {"anyOf", s.AnyOf, &e.AnyOf}, {"oneOf", s.OneOf, &e.OneOf}} {
		for i, m := range c.refs {
			*c.dst = append(*c.dst, t.index(m, fmt.Sprintf("%s/%s/%d", loc, c.kw, i), noValidate))
		}
	}
	if d := s.Discriminator; d != nil && d.PropertyName != "" && (len(s.OneOf) > 0 || len(s.AnyOf) > 0) {
		e.Discriminator = d.PropertyName
		e.Mapping = t.mapping(s, noValidate)
	}
	if s.Not != nil {
		e.Not = t.index(s.Not, loc+"/not", noValidate)
	}
	if s.Default != nil {
		e.Default = canonicalJSON(s.Default)
	}
	e.ReadOnly, e.NoValidate = s.ReadOnly, noValidate
	t.unenforced(s, loc)
}

// mapping is a discriminator's mapping: the explicit one, else each member
// $ref's last segment, as OpenAPI defines; sorted by value.
func (t *reqTable) mapping(s *openapi3.Schema, noValidate bool) []ReqMapping {
	members := s.OneOf
	if len(members) == 0 {
		members = s.AnyOf
	}
	var es []ReqMapping
	seen := map[string]bool{}
	for _, v := range sortedKeys(s.Discriminator.Mapping) {
		target := s.Discriminator.Mapping[v]
		i := mappingMember(members, target.Ref, target.Value)
		if i < 0 || members[i].Ref == "" {
			continue // declareUnion warns
		}
		m := members[i]
		es = append(es, ReqMapping{v, t.index(m, m.Ref, noValidate)})
		seen[m.Ref] = true
	}
	for _, m := range members {
		if m.Ref != "" && !seen[m.Ref] {
			es = append(es, ReqMapping{m.Ref[strings.LastIndex(m.Ref, "/")+1:], t.index(m, m.Ref, noValidate)})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Value < es[j].Value })
	return es
}

// unenforced warns about JSON Schema 2020-12 keywords (OpenAPI 3.1) that
// the generated validator does not check.
func (t *reqTable) unenforced(s *openapi3.Schema, loc string) {
	var kws []string
	if len(s.PrefixItems) > 0 {
		kws = append(kws, "prefixItems")
	}
	if s.Contains != nil {
		kws = append(kws, "contains")
	}
	if len(s.PatternProperties) > 0 {
		kws = append(kws, "patternProperties")
	}
	if len(s.DependentSchemas) > 0 {
		kws = append(kws, "dependentSchemas")
	}
	if len(s.DependentRequired) > 0 {
		kws = append(kws, "dependentRequired")
	}
	if s.PropertyNames != nil {
		kws = append(kws, "propertyNames")
	}
	if s.If != nil {
		kws = append(kws, "if")
	}
	if s.UnevaluatedItems.Has != nil || s.UnevaluatedItems.Schema != nil {
		kws = append(kws, "unevaluatedItems")
	}
	if s.UnevaluatedProperties.Has != nil || s.UnevaluatedProperties.Schema != nil {
		kws = append(kws, "unevaluatedProperties")
	}
	if len(kws) > 0 {
		t.b.warnf(diag.WarnTyped, loc, "%s not enforced on requests", strings.Join(kws, ", "))
	}
}

// jsonTypes are the JSON types of the type keyword, as idemimpl.Types.
var jsonTypes = map[string]idemimpl.Types{
	openapi3.TypeNull: idemimpl.TypeNull, openapi3.TypeBoolean: idemimpl.TypeBoolean, openapi3.TypeInteger: idemimpl.TypeInteger,
	openapi3.TypeNumber: idemimpl.TypeNumber, openapi3.TypeString: idemimpl.TypeString, openapi3.TypeArray: idemimpl.TypeArray,
	openapi3.TypeObject: idemimpl.TypeObject,
}

// formatConst is the format the validator checks for a schema of the
// types given; idemimpl.FormatNone for one it does not check.
func formatConst(format string, types []string) idemimpl.Format {
	is := func(ty string) bool {
		for _, x := range types {
			if x == ty {
				return true
			}
		}
		return false
	}
	switch {
	case is(openapi3.TypeInteger) && format == "int32":
		return idemimpl.FormatInt32
	case is(openapi3.TypeNumber) && format == "float":
		return idemimpl.FormatFloat
	case !is(openapi3.TypeString) && len(types) > 0:
		return idemimpl.FormatNone
	}
	return map[string]idemimpl.Format{
		"date-time": idemimpl.FormatDateTime, "date": idemimpl.FormatDate, "uuid": idemimpl.FormatUUID, "email": idemimpl.FormatEmail,
		"uri": idemimpl.FormatURI, "ipv4": idemimpl.FormatIPv4, "ipv6": idemimpl.FormatIPv6, "byte": idemimpl.FormatByte,
	}[format]
}

// decimal writes a limit from the spec as an exact decimal. kin-openapi
// holds limits as float64; the shortest spelling that reads back as the
// same float64 is the decimal the spec most likely wrote.
func decimal(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// canonicalJSON is a value from the spec (enum, const, default) in the
// canonical JSON form requests are compared in.
func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	tree, err := idemimpl.ParseJSON(b)
	if err != nil {
		return string(b)
	}
	return string(idemimpl.AppendJSON(nil, &tree, nil))
}
