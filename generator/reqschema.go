package generator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// ReqSchema is one entry of the generated package's idemimpl.Schemas table:
// the compact descriptor of a request body or parameter schema that the
// generated decoders validate against. Every schema has one entry (one per
// named schema, shared by all its uses; a second when a config turns
// validation off below it), so recursive schemas cost one entry each.
type ReqSchema struct {
	Index int
	// Literal is the entry as a Go composite literal of type
	// idemimpl.Schema, without the type name: {Types: idemimpl.TypeString}.
	Literal string
	// Source is the spec location the entry was built from.
	Source string
}

// reqTable builds the Schemas table. Index 0 is the schema that allows any
// value.
type reqTable struct {
	b     *builder
	list  []*ReqSchema
	byKey map[reqKey]int
	// byLiteral shares the entries of schemas without subschemas.
	byLiteral map[string]int
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
	t := &reqTable{b: b, byKey: map[reqKey]int{}, byLiteral: map[string]int{}, skip: map[string]bool{}, used: map[string]bool{}}
	for _, s := range skip {
		t.skip[s] = true
	}
	t.list = append(t.list, &ReqSchema{Index: 0, Literal: "{}", Source: "any value"})
	t.schemas, t.noValidate = append(t.schemas, nil), append(t.noValidate, false)
	return t
}

// index returns the table index of the schema sr found at loc, building its
// entry (and those of the schemas it refers to) once.
func (t *reqTable) index(sr *openapi3.SchemaRef, loc string, noValidate bool) int {
	if sr == nil || sr.Value == nil {
		return 0
	}
	if sr.Ref != "" {
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
		// Schemas without subschemas are shared by their literal: Stripe
		// has thousands of {Types: idemimpl.TypeString, MaxLength: 5000}.
		lit := t.literal(sr.Value, loc, noValidate)
		if i, ok := t.byLiteral[lit]; ok {
			t.byKey[key] = i
			return i
		}
		e := &ReqSchema{Index: len(t.list), Source: loc, Literal: lit}
		t.list = append(t.list, e)
		t.schemas, t.noValidate = append(t.schemas, sr.Value), append(t.noValidate, noValidate)
		t.byKey[key], t.byLiteral[lit] = e.Index, e.Index
		return e.Index
	}
	e := &ReqSchema{Index: len(t.list), Source: loc}
	t.list = append(t.list, e)
	t.schemas, t.noValidate = append(t.schemas, sr.Value), append(t.noValidate, noValidate)
	t.byKey[key] = e.Index
	e.Literal = t.literal(sr.Value, loc, noValidate)
	return e.Index
}

// leaf reports whether s has no subschemas.
func leaf(s *openapi3.Schema) bool {
	return s.Items == nil && len(s.Properties) == 0 && s.AdditionalProperties.Schema == nil &&
		len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) == 0 && s.Not == nil
}

// literal renders schema s as an idemimpl.Schema literal.
func (t *reqTable) literal(s *openapi3.Schema, loc string, noValidate bool) string {
	var f []string
	add := func(name, value string) { f = append(f, name+": "+value) }
	types, nullable := typesOf(s)
	var ts []string
	for _, ty := range types {
		ts = append(ts, "idemimpl.Type"+goName(ty))
	}
	if nullable && len(types) > 0 {
		ts = append(ts, "idemimpl.TypeNull")
	}
	if len(ts) > 0 {
		add("Types", strings.Join(ts, "|"))
	}
	if nullable && len(types) == 0 {
		add("Nullable", "true")
	}
	if fm := formatConst(s.Format, types); fm != "" {
		add("Format", "idemimpl."+fm)
	}
	var enum []string
	for _, v := range s.Enum {
		enum = append(enum, strconv.Quote(canonicalJSON(v)))
	}
	if s.Const != nil {
		enum = []string{strconv.Quote(canonicalJSON(s.Const))}
	}
	if len(enum) > 0 && !noValidate {
		add("Enum", "[]string{"+strings.Join(enum, ", ")+"}")
	}
	var has []string
	min, exclMin := s.Min, s.ExclusiveMin.IsTrue()
	if v := s.ExclusiveMin.Value; v != nil && (min == nil || *v >= *min) {
		min, exclMin = v, true
	}
	max, exclMax := s.Max, s.ExclusiveMax.IsTrue()
	if v := s.ExclusiveMax.Value; v != nil && (max == nil || *v <= *max) {
		max, exclMax = v, true
	}
	if min != nil {
		has = append(has, "idemimpl.HasMinimum")
		add("Minimum", strconv.Quote(decimal(*min)))
		if exclMin {
			add("ExclusiveMinimum", "true")
		}
	}
	if max != nil {
		has = append(has, "idemimpl.HasMaximum")
		add("Maximum", strconv.Quote(decimal(*max)))
		if exclMax {
			add("ExclusiveMaximum", "true")
		}
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		has = append(has, "idemimpl.HasMultipleOf")
		add("MultipleOf", strconv.Quote(decimal(*s.MultipleOf)))
	}
	if s.MinLength > 0 {
		has = append(has, "idemimpl.HasMinLength")
		add("MinLength", strconv.FormatUint(s.MinLength, 10))
	}
	if s.MaxLength != nil {
		has = append(has, "idemimpl.HasMaxLength")
		add("MaxLength", strconv.FormatUint(*s.MaxLength, 10))
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			t.b.warnf(loc, "pattern %q is not enforced: Go's regexp (RE2 syntax) cannot compile it: %v", s.Pattern, err)
		} else {
			add("Pattern", strconv.Quote(s.Pattern))
		}
	}
	if s.MinItems > 0 {
		has = append(has, "idemimpl.HasMinItems")
		add("MinItems", strconv.FormatUint(s.MinItems, 10))
	}
	if s.MaxItems != nil {
		has = append(has, "idemimpl.HasMaxItems")
		add("MaxItems", strconv.FormatUint(*s.MaxItems, 10))
	}
	if s.UniqueItems {
		add("UniqueItems", "true")
	}
	if s.MinProps > 0 {
		has = append(has, "idemimpl.HasMinProperties")
		add("MinProperties", strconv.FormatUint(s.MinProps, 10))
	}
	if s.MaxProps != nil {
		has = append(has, "idemimpl.HasMaxProperties")
		add("MaxProperties", strconv.FormatUint(*s.MaxProps, 10))
	}
	if len(has) > 0 {
		f = append(f[:0:0], append([]string{"Has: " + strings.Join(has, "|")}, f...)...)
	}
	if s.Items != nil {
		add("Items", strconv.Itoa(t.index(s.Items, loc+"/items", noValidate)))
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
		var props []string
		for _, name := range names {
			idx := 0
			if ps, ok := s.Properties[name]; ok {
				idx = t.index(ps, loc+"/properties/"+pointerEscape(name), noValidate)
			}
			p := fmt.Sprintf("{Name: %s, Schema: %d", strconv.Quote(name), idx)
			if required[name] {
				p += ", Required: true"
			}
			props = append(props, p+"}")
		}
		add("Props", "[]idemimpl.Prop{"+strings.Join(props, ", ")+"}")
	}
	if ap := s.AdditionalProperties; ap.Has != nil && !*ap.Has {
		add("AdditionalProperties", "idemimpl.NoAdditional")
	} else if i := t.index(ap.Schema, loc+"/additionalProperties", noValidate); i > 0 {
		add("AdditionalProperties", strconv.Itoa(i))
	} else if (ap.Schema != nil || ap.Has != nil) && len(s.Properties) > 0 {
		// Declared beside properties: the typed request keeps undeclared
		// members in its AdditionalProperties map. Without the keyword it
		// drops them, and so does the decoded request (idemimpl's prune).
		add("AdditionalProperties", "idemimpl.AnyAdditional")
	}
	for _, c := range []struct {
		kw   string
		refs openapi3.SchemaRefs
	}{{"AllOf", s.AllOf}, {"AnyOf", s.AnyOf}, {"OneOf", s.OneOf}} {
		if len(c.refs) == 0 {
			continue
		}
		var idx []string
		for i, m := range c.refs {
			idx = append(idx, strconv.Itoa(t.index(m, fmt.Sprintf("%s/%s/%d", loc, lowerFirst(c.kw), i), noValidate)))
		}
		add(c.kw, "[]int{"+strings.Join(idx, ", ")+"}")
	}
	if d := s.Discriminator; d != nil && d.PropertyName != "" && (len(s.OneOf) > 0 || len(s.AnyOf) > 0) {
		add("Discriminator", strconv.Quote(d.PropertyName))
		if m := t.mapping(s, loc, noValidate); m != "" {
			add("Mapping", m)
		}
	}
	if s.Not != nil {
		add("Not", strconv.Itoa(t.index(s.Not, loc+"/not", noValidate)))
	}
	if s.Default != nil {
		add("Default", strconv.Quote(canonicalJSON(s.Default)))
	}
	if s.ReadOnly {
		add("ReadOnly", "true")
	}
	if noValidate {
		add("NoValidate", "true")
	}
	t.unenforced(s, loc)
	return "{" + strings.Join(f, ", ") + "}"
}

// mapping renders a discriminator's mapping: the explicit one, else each
// member $ref's last segment, as OpenAPI defines.
func (t *reqTable) mapping(s *openapi3.Schema, loc string, noValidate bool) string {
	members := s.OneOf
	if len(members) == 0 {
		members = s.AnyOf
	}
	type entry struct {
		value string
		idx   int
	}
	var es []entry
	seen := map[string]bool{}
	for _, v := range sortedKeys(s.Discriminator.Mapping) {
		target := s.Discriminator.Mapping[v]
		i := mappingMember(members, target.Ref, target.Value)
		if i < 0 || members[i].Ref == "" {
			continue // declareUnion warns
		}
		m := members[i]
		es = append(es, entry{v, t.index(m, m.Ref, noValidate)})
		seen[m.Ref] = true
	}
	for _, m := range members {
		if m.Ref != "" && !seen[m.Ref] {
			es = append(es, entry{m.Ref[strings.LastIndex(m.Ref, "/")+1:], t.index(m, m.Ref, noValidate)})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].value < es[j].value })
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("{Value: %s, Schema: %d}", strconv.Quote(e.value), e.idx))
	}
	if len(out) == 0 {
		return ""
	}
	return "[]idemimpl.Mapping{" + strings.Join(out, ", ") + "}"
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
		t.b.warnf(loc, "%s not enforced on requests", strings.Join(kws, ", "))
	}
}

func formatConst(format string, types []string) string {
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
		return "FormatInt32"
	case is(openapi3.TypeNumber) && format == "float":
		return "FormatFloat"
	case !is(openapi3.TypeString) && len(types) > 0:
		return ""
	}
	return map[string]string{
		"date-time": "FormatDateTime", "date": "FormatDate", "uuid": "FormatUUID", "email": "FormatEmail",
		"uri": "FormatURI", "ipv4": "FormatIPv4", "ipv6": "FormatIPv6", "byte": "FormatByte",
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
