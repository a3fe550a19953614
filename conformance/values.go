package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// A value generated from a schema is plain JSON data: map[string]any,
// []any, string, float64 or json.Number, bool, nil.

// maxDepth bounds recursion through self-referencing schemas.
const maxDepth = 12

// generate returns a value that satisfies s: its type, required members,
// enum or const, bounds, lengths, pattern and format. Optional members are
// left out unless minProperties needs them. n chooses among the valid values
// where the schema leaves a choice (the n-th enum member, the n-th integer
// from the minimum), so that generations with different n differ.
func generate(sr *openapi3.SchemaRef, n int) (any, error) {
	return gen(sr, n, 0)
}

func gen(sr *openapi3.SchemaRef, n int, depth int) (any, error) {
	if sr == nil || sr.Value == nil {
		return "conformance", nil
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("schema nests deeper than %d levels", maxDepth)
	}
	s := sr.Value
	if s.Const != nil {
		return s.Const, nil
	}
	if len(s.Enum) > 0 {
		return s.Enum[n%len(s.Enum)], nil
	}
	if len(s.AllOf) > 0 {
		return genAllOf(s, n, depth)
	}
	if len(s.OneOf) > 0 {
		return genMember(s, s.OneOf[0], n, depth)
	}
	if len(s.AnyOf) > 0 {
		return genMember(s, s.AnyOf[0], n, depth)
	}
	switch typeOf(s) {
	case openapi3.TypeObject:
		return genObject(s, n, depth)
	case openapi3.TypeArray:
		return genArray(s, n, depth)
	case openapi3.TypeInteger:
		return genNumber(s, n, true)
	case openapi3.TypeNumber:
		return genNumber(s, n, false)
	case openapi3.TypeBoolean:
		return n%2 == 0, nil
	case openapi3.TypeNull:
		return nil, nil
	}
	return genString(s, n)
}

// typeOf is the schema's first non-null type, or one inferred from its
// keywords when it declares none.
func typeOf(s *openapi3.Schema) string {
	if s.Type != nil {
		for _, t := range *s.Type {
			if t != openapi3.TypeNull {
				return t
			}
		}
		if len(*s.Type) > 0 {
			return openapi3.TypeNull
		}
	}
	switch {
	case len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil || len(s.Required) > 0:
		return openapi3.TypeObject
	case s.Items != nil:
		return openapi3.TypeArray
	case s.Min != nil || s.Max != nil || s.MultipleOf != nil:
		return openapi3.TypeNumber
	}
	return openapi3.TypeString
}

// genMember generates the union member m of s, with the discriminator
// property, if s has one, naming m: its key in the mapping, else its
// schema's name.
func genMember(s *openapi3.Schema, m *openapi3.SchemaRef, n int, depth int) (any, error) {
	v, err := gen(m, n, depth+1)
	if err != nil || s.Discriminator == nil || m.Ref == "" {
		return v, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	name := m.Ref[strings.LastIndex(m.Ref, "/")+1:]
	keys := make([]string, 0, len(s.Discriminator.Mapping))
	for k := range s.Discriminator.Mapping {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// A reference, or a bare schema name (the component of that name).
		if ref := s.Discriminator.Mapping[k].Ref; ref != "" && (ref == m.Ref || m.Ref == "#/components/schemas/"+ref) {
			name = k
			break
		}
	}
	obj[s.Discriminator.PropertyName] = name
	return obj, nil
}

func genAllOf(s *openapi3.Schema, n int, depth int) (any, error) {
	if m, ok := mergeScalars(s); ok {
		return gen(&openapi3.SchemaRef{Value: m}, n, depth+1)
	}
	out := map[string]any{}
	var scalar any
	for _, part := range s.AllOf {
		v, err := gen(part, n, depth+1)
		if err != nil {
			return nil, err
		}
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				out[k] = x
			}
			continue
		}
		scalar = v
	}
	if len(s.Properties) > 0 || len(s.Required) > 0 {
		own, err := genObject(s, n, depth)
		if err != nil {
			return nil, err
		}
		for k, x := range own.(map[string]any) {
			out[k] = x
		}
	}
	if len(out) == 0 && scalar != nil {
		return scalar, nil
	}
	return out, nil
}

// mergeScalars is the one schema that an allOf of scalar constraints
// (`allOf: [{$ref: Amount}, {minimum: 100}]`) amounts to: the most
// specific type, the intersection of the enums, the tightest bounds on
// both sides, a multipleOf of every multipleOf, the longest minLength and
// the shortest maxLength, the first format and pattern (the generated value
// is validated against them all). ok is false when a part shapes an object
// or an array, or is a union.
func mergeScalars(s *openapi3.Schema) (*openapi3.Schema, bool) {
	var parts []*openapi3.Schema
	var collect func(s *openapi3.Schema, depth int) bool
	collect = func(s *openapi3.Schema, depth int) bool {
		if depth > maxDepth || len(s.Properties) > 0 || s.Items != nil || s.AdditionalProperties.Schema != nil ||
			len(s.Required) > 0 || len(s.OneOf)+len(s.AnyOf) > 0 || s.Not != nil {
			return false
		}
		if t := typeOf(s); s.Type != nil && (t == openapi3.TypeObject || t == openapi3.TypeArray) {
			return false
		}
		parts = append(parts, s)
		for _, sub := range s.AllOf {
			if sub == nil || sub.Value == nil || !collect(sub.Value, depth+1) {
				return false
			}
		}
		return true
	}
	if !collect(s, 0) {
		return nil, false
	}
	m := &openapi3.Schema{}
	lo, hi := math.Inf(-1), math.Inf(1)
	loExcl, hiExcl := false, false
	for _, p := range parts {
		switch {
		case p.Type == nil:
		case m.Type == nil, p.Type.Is(openapi3.TypeInteger):
			m.Type = p.Type
		}
		if m.Format == "" {
			m.Format = p.Format
		}
		if m.Pattern == "" {
			m.Pattern = p.Pattern
		}
		if m.Const == nil {
			m.Const = p.Const
		}
		m.Enum = intersectEnums(m.Enum, p.Enum)
		m.MinLength = max(m.MinLength, p.MinLength)
		if p.MaxLength != nil && (m.MaxLength == nil || *p.MaxLength < *m.MaxLength) {
			m.MaxLength = p.MaxLength
		}
		if p.MultipleOf != nil && *p.MultipleOf > 0 {
			m.MultipleOf = commonMultiple(m.MultipleOf, *p.MultipleOf)
		}
		pl, plx, ph, phx := bounds(p)
		if pl > lo || pl == lo && plx {
			lo, loExcl = pl, plx
		}
		if ph < hi || ph == hi && phx {
			hi, hiExcl = ph, phx
		}
	}
	if len(m.Enum) == 0 && slices.ContainsFunc(parts, func(p *openapi3.Schema) bool { return len(p.Enum) > 0 }) {
		return nil, false // enums with no value in common: gen reports it
	}
	if !math.IsInf(lo, -1) {
		m.Min, m.ExclusiveMin = &lo, openapi3.ExclusiveBound{Bool: &loExcl}
	}
	if !math.IsInf(hi, 1) {
		m.Max, m.ExclusiveMax = &hi, openapi3.ExclusiveBound{Bool: &hiExcl}
	}
	return m, true
}

// bounds are the lower and upper bounds s sets on a number, each with
// whether it is exclusive, in OpenAPI 3.0's form (a boolean beside
// minimum) or 3.1's (exclusiveMinimum a number); infinite when unset.
func bounds(s *openapi3.Schema) (lo float64, loExcl bool, hi float64, hiExcl bool) {
	lo, hi = math.Inf(-1), math.Inf(1)
	loExcl, hiExcl = s.ExclusiveMin.IsTrue(), s.ExclusiveMax.IsTrue()
	if s.Min != nil {
		lo = *s.Min
	}
	if s.Max != nil {
		hi = *s.Max
	}
	if v := s.ExclusiveMin.Value; v != nil && *v >= lo {
		lo, loExcl = *v, true
	}
	if v := s.ExclusiveMax.Value; v != nil && *v <= hi {
		hi, hiExcl = *v, true
	}
	return lo, loExcl, hi, hiExcl
}

// intersectEnums is the values of both enums (a nil enum allows any).
func intersectEnums(a, b []any) []any {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	var out []any
	for _, x := range a {
		if slices.ContainsFunc(b, func(y any) bool { return reflect.DeepEqual(x, y) }) {
			out = append(out, x)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

// commonMultiple is a multipleOf that is a multiple of m (nil: none) and of
// x: the larger when it is a multiple of the smaller, else their product.
func commonMultiple(m *float64, x float64) *float64 {
	if m == nil {
		return &x
	}
	a, b := max(*m, x), min(*m, x)
	if q := a / b; q == math.Trunc(q) {
		return &a
	}
	p := a * b
	return &p
}

func genObject(s *openapi3.Schema, n int, depth int) (any, error) {
	out := map[string]any{}
	names := append([]string(nil), s.Required...)
	sort.Strings(names)
	for _, name := range names {
		ps := s.Properties[name]
		if ps != nil && ps.Value != nil && ps.Value.ReadOnly {
			continue
		}
		v, err := gen(ps, n, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	if uint64(len(out)) < s.MinProps {
		for _, name := range optional(s) {
			if uint64(len(out)) >= s.MinProps {
				break
			}
			v, err := gen(s.Properties[name], n, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = v
		}
	}
	return out, nil
}

// optional lists the writable properties of s that are not required, sorted.
func optional(s *openapi3.Schema) []string {
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var out []string
	for name, ps := range s.Properties {
		if req[name] || ps == nil || ps.Value == nil || ps.Value.ReadOnly {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func genArray(s *openapi3.Schema, n int, depth int) (any, error) {
	count := max(s.MinItems, 1)
	if s.MaxItems != nil && *s.MaxItems < count {
		count = *s.MaxItems
	}
	out := make([]any, 0, count)
	for i := range int(count) {
		// Distinct items for uniqueItems: a choice of their own each.
		v, err := gen(s.Items, n+i, depth+1)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// genNumber picks the smallest value the bounds allow (1 when unbounded
// below) and n steps above it, rounded up to multipleOf.
func genNumber(s *openapi3.Schema, n int, integer bool) (any, error) {
	step := 1.0
	if !integer {
		step = 0.5
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		step = *s.MultipleOf
	}
	lo, loExcl, hi, hiExcl := bounds(s)
	v := 1.0
	if !math.IsInf(lo, -1) {
		v = lo
	} else if !math.IsInf(hi, 1) && hi < 1 {
		v = hi
	}
	v += float64(n) * step
	fits := func(x float64) bool {
		return (x > lo || (!loExcl && x == lo)) && (x < hi || (!hiExcl && x == hi))
	}
	v = math.Ceil(v/step) * step
	for range 3 {
		if fits(v) {
			break
		}
		if !fits(v) && (v < lo || (loExcl && v == lo)) {
			v += step
		} else {
			v -= step
		}
	}
	if !fits(v) && n > 0 {
		return genNumber(s, 0, integer)
	}
	if !fits(v) {
		return nil, fmt.Errorf("no %s satisfies minimum/maximum/multipleOf", typeName(integer))
	}
	if integer {
		return json.Number(fmt.Sprintf("%d", int64(v))), nil
	}
	return json.Number(fmt.Sprintf("%g", v)), nil
}

func typeName(integer bool) string {
	if integer {
		return "integer"
	}
	return "number"
}

// formatValues are valid values of the string formats OpenAPI names, two
// each (n chooses).
var formatValues = map[string][2]string{
	"date-time": {"2024-01-02T03:04:05Z", "2024-01-02T03:04:06Z"},
	"date":      {"2024-01-02", "2024-01-03"},
	"time":      {"03:04:05Z", "03:04:06Z"},
	"uuid":      {"0190a8e2-7c3b-7d4e-8f00-000000000001", "0190a8e2-7c3b-7d4e-8f00-000000000002"},
	"email":     {"conformance@example.com", "conformance2@example.com"},
	"uri":       {"https://example.com/conformance", "https://example.com/conformance2"},
	"hostname":  {"example.com", "example.org"},
	"ipv4":      {"192.0.2.1", "192.0.2.2"},
	"ipv6":      {"2001:db8::1", "2001:db8::2"},
	"byte":      {"Y29uZm9ybWFuY2U=", "Y29uZm9ybWFuY2Uy"},
	// Any string is binary; a generated server reads binary in JSON as
	// base64 (encoding/json's []byte), so base64 text suits both.
	"binary": {"Y29uZm9ybWFuY2U=", "Y29uZm9ybWFuY2Uy"},
}

func genString(s *openapi3.Schema, n int) (any, error) {
	if v, ok := formatValues[s.Format]; ok && s.Pattern == "" {
		return v[n%2], nil
	}
	if s.Pattern != "" {
		return fromPattern(s.Pattern, n, s.MinLength, s.MaxLength)
	}
	base := "conformance"
	if n > 0 {
		base += "-" + strconv.Itoa(n)
	}
	return fitLength(base, s.MinLength, s.MaxLength, n), nil
}

// fitLength pads or cuts v to the length bounds (in characters).
func fitLength(v string, minLen uint64, maxLen *uint64, n int) string {
	r := []rune(v)
	pad := rune('a' + n%26)
	for uint64(len(r)) < minLen {
		r = append(r, pad)
	}
	if maxLen != nil && uint64(len(r)) > *maxLen {
		r = r[:*maxLen]
		if n > 0 && len(r) > 0 {
			r[len(r)-1] = pad
		}
	}
	return string(r)
}

// fromPattern returns a string the ECMA-262 style pattern matches, built
// from its parsed syntax tree: the first branch of every alternation, the
// minimum of every repetition, and the n-th letter or digit of every class;
// when that is shorter than minLen, the repetitions that may repeat more
// (*, +, ?, {m,n}) do, in order, until it is long enough. The result is
// checked against the pattern and the length bounds.
func fromPattern(pattern string, n int, minLen uint64, maxLen *uint64) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	re = re.Simplify()
	var b strings.Builder
	walkPattern(&b, re, n, new(int))
	v := b.String()
	if short := int(minLen) - len([]rune(v)); short > 0 {
		b.Reset()
		walkPattern(&b, re, n, &short)
		v = b.String()
	}
	matcher, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	if !matcher.MatchString(v) {
		return "", fmt.Errorf("pattern %q: no value generated (%q does not match); supply a body", pattern, v)
	}
	if l := uint64(len([]rune(v))); l < minLen || (maxLen != nil && l > *maxLen) {
		bound := fmt.Sprintf("minLength %d", minLen)
		if maxLen != nil {
			bound = fmt.Sprintf("length %d..%d", minLen, *maxLen)
		}
		return "", fmt.Errorf("pattern %q with %s: the value generated, %q, has %d characters", pattern, bound, v, l)
	}
	return v, nil
}

// walkPattern writes a string re matches: the minimum of every repetition,
// plus, while *grow is positive, more of the repetitions that allow it,
// each taking what it adds off *grow.
func walkPattern(b *strings.Builder, re *syntax.Regexp, n int, grow *int) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(classRune(re.Rune, n))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteRune(rune('a' + n%26))
	case syntax.OpCapture, syntax.OpConcat:
		for _, sub := range re.Sub {
			walkPattern(b, sub, n, grow)
		}
	case syntax.OpAlternate:
		walkPattern(b, re.Sub[0], n, grow)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		for range lo {
			walkPattern(b, re.Sub[0], n, grow)
		}
		for i := lo; *grow > 0 && (hi < 0 || i < hi); i++ {
			before := b.Len()
			var one strings.Builder
			walkPattern(&one, re.Sub[0], n, new(int))
			if one.Len() == 0 {
				break // it adds nothing
			}
			b.WriteString(one.String())
			*grow -= len([]rune(b.String()[before:]))
		}
	}
	// Anchors, word boundaries, empty match: nothing.
}

// classRune picks a printable rune of a character class given as ranges
// (lo, hi pairs): the n-th letter or digit when the class has any.
func classRune(ranges []rune, n int) rune {
	var alnum []rune
	for i := 0; i+1 < len(ranges) && len(alnum) <= n; i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < lo+128 && len(alnum) <= n; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				alnum = append(alnum, r)
			}
		}
	}
	if len(alnum) > 0 {
		return alnum[min(n, len(alnum)-1)]
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if unicode.IsPrint(r) && r != ' ' {
				return r
			}
		}
	}
	if len(ranges) > 0 {
		return ranges[0]
	}
	return 'a'
}
