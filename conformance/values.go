package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemgen/idemgen/internal/jsonkit"
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
	lo, hi := math.Inf(-1), math.Inf(1)
	loExcl, hiExcl := s.ExclusiveMin.IsTrue(), s.ExclusiveMax.IsTrue()
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
// minimum of every repetition, and the n-th letter or digit of every class.
// The result is checked against the pattern.
func fromPattern(pattern string, n int, minLen uint64, maxLen *uint64) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	var b strings.Builder
	walkPattern(&b, re.Simplify(), n)
	v := b.String()
	matcher, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	if !matcher.MatchString(v) {
		return "", fmt.Errorf("pattern %q: no value generated (%q does not match); supply a body", pattern, v)
	}
	if n := uint64(len([]rune(v))); n < minLen || (maxLen != nil && n > *maxLen) {
		return "", fmt.Errorf("pattern %q: generated %q breaks the length bounds; supply a body", pattern, v)
	}
	return v, nil
}

func walkPattern(b *strings.Builder, re *syntax.Regexp, n int) {
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
	case syntax.OpCapture:
		for _, sub := range re.Sub {
			walkPattern(b, sub, n)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			walkPattern(b, sub, n)
		}
	case syntax.OpAlternate:
		walkPattern(b, re.Sub[0], n)
	case syntax.OpPlus:
		walkPattern(b, re.Sub[0], n)
	case syntax.OpRepeat:
		for range re.Min {
			walkPattern(b, re.Sub[0], n)
		}
	}
	// OpStar, OpQuest, anchors, word boundaries, empty match: nothing.
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

// validate checks v against the schema with kin-openapi's validator.
func validate(sr *openapi3.SchemaRef, v any) error {
	if sr == nil || sr.Value == nil {
		return nil
	}
	// Round-trip through JSON so numbers are float64, as the validator
	// expects.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return err
	}
	return sr.Value.VisitJSON(plain, openapi3.MultiErrors())
}

// variant returns a body that the schema accepts but whose fingerprint
// differs from body's: a leaf outside the excluded pointers changed to
// another valid value, or else an optional member added. ok is false when
// neither is possible.
func variant(sr *openapi3.SchemaRef, body any, exclude []string) (any, bool) {
	base := canonical(body, exclude)
	try := func(v any) bool {
		return validate(sr, v) == nil && canonical(v, exclude) != base
	}
	for _, leaf := range leaves(body, "") {
		if excluded(leaf, exclude) {
			continue
		}
		sub := schemaAt(sr, leaf)
		cur, _ := at(body, leaf)
		for _, n := range []int{1, 0, 2} {
			v, err := generate(sub, n)
			if err != nil || equalJSON(v, cur) {
				continue
			}
			cand := replaceAt(body, leaf, v)
			if try(cand) {
				return cand, true
			}
		}
	}
	for _, obj := range objects(body, "") {
		s := schemaAt(sr, obj)
		if s == nil || s.Value == nil {
			continue
		}
		m, _ := at(body, obj)
		for _, name := range optional(s.Value) {
			if _, ok := m.(map[string]any)[name]; ok || excluded(obj+"/"+jsonkit.EscapeToken(name), exclude) {
				continue
			}
			v, err := generate(s.Value.Properties[name], 0)
			if err != nil {
				continue
			}
			cand := replaceAt(body, obj+"/"+jsonkit.EscapeToken(name), v)
			if try(cand) {
				return cand, true
			}
		}
	}
	return nil, false
}

// leaves lists the JSON pointers of body's scalar values, depth first,
// members in name order.
func leaves(v any, prefix string) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for _, k := range sortedMapKeys(v) {
			out = append(out, leaves(v[k], prefix+"/"+jsonkit.EscapeToken(k))...)
		}
		return out
	case []any:
		var out []string
		for i, x := range v {
			out = append(out, leaves(x, fmt.Sprintf("%s/%d", prefix, i))...)
		}
		return out
	}
	return []string{prefix}
}

// objects lists the JSON pointers of body's objects, the root first.
func objects(v any, prefix string) []string {
	switch v := v.(type) {
	case map[string]any:
		out := []string{prefix}
		for _, k := range sortedMapKeys(v) {
			out = append(out, objects(v[k], prefix+"/"+jsonkit.EscapeToken(k))...)
		}
		return out
	case []any:
		var out []string
		for i, x := range v {
			out = append(out, objects(x, fmt.Sprintf("%s/%d", prefix, i))...)
		}
		return out
	}
	return nil
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// split is the reference tokens of ptr; "" (the whole body) is none, and
// so is a malformed pointer (which names nothing).
func split(ptr string) []string {
	toks, _ := jsonkit.ParsePointer(ptr)
	return toks
}

// at returns the value at ptr.
func at(v any, ptr string) (any, bool) { return jsonkit.Get(v, split(ptr)) }

// replaceAt returns a deep copy of v with the value at ptr set to x (a
// missing last member is added).
func replaceAt(v any, ptr string, x any) any {
	parts := split(ptr)
	if len(parts) == 0 {
		return x
	}
	var rec func(v any, parts []string) any
	rec = func(v any, parts []string) any {
		if len(parts) == 0 {
			return x
		}
		switch c := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(c)+1)
			for k, y := range c {
				out[k] = y
			}
			out[parts[0]] = rec(c[parts[0]], parts[1:])
			return out
		case []any:
			out := append([]any(nil), c...)
			if i, ok := jsonkit.Index(parts[0], len(out)); ok {
				out[i] = rec(out[i], parts[1:])
			}
			return out
		}
		return v
	}
	return rec(v, parts)
}

// schemaAt follows ptr through properties and items (and allOf, oneOf and
// anyOf members) to the schema of the value there; nil when unknown.
func schemaAt(sr *openapi3.SchemaRef, ptr string) *openapi3.SchemaRef {
	for _, p := range split(ptr) {
		sr = child(sr, p, 0)
		if sr == nil {
			return nil
		}
	}
	return sr
}

func child(sr *openapi3.SchemaRef, name string, depth int) *openapi3.SchemaRef {
	if sr == nil || sr.Value == nil || depth > maxDepth {
		return nil
	}
	s := sr.Value
	if ps, ok := s.Properties[name]; ok {
		return ps
	}
	if s.Items != nil {
		return s.Items
	}
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, part := range group {
			if c := child(part, name, depth+1); c != nil {
				return c
			}
		}
	}
	if s.AdditionalProperties.Schema != nil {
		return s.AdditionalProperties.Schema
	}
	return nil
}

// excluded reports whether ptr is one of the fingerprint's excluded
// pointers or lies under one.
func excluded(ptr string, exclude []string) bool {
	for _, e := range exclude {
		if ptr == e || strings.HasPrefix(ptr, e+"/") {
			return true
		}
	}
	return false
}

// canonical is v's RFC 8785 form with the excluded pointers removed:
// equal for bodies the fingerprint cannot tell apart (for what conformance
// generates, whose integers are doubles anyway).
func canonical(v any, exclude []string) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	toks := make([][]string, 0, len(exclude))
	for _, e := range exclude {
		if t := split(e); t != nil {
			toks = append(toks, t)
		}
	}
	c, err := jsonkit.Canonical(b, toks)
	if err != nil {
		return string(b)
	}
	return string(c)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// reordered encodes v as JSON with every object's members in reverse name
// order and white space between all tokens: the same JSON text to RFC 8785,
// different bytes.
func reordered(v any) []byte {
	var b strings.Builder
	var rec func(v any, indent string)
	rec = func(v any, indent string) {
		switch c := v.(type) {
		case map[string]any:
			keys := sortedMapKeys(c)
			b.WriteString("{\n")
			for i := len(keys) - 1; i >= 0; i-- {
				k, _ := json.Marshal(keys[i])
				b.WriteString(indent + "\t")
				b.Write(k)
				b.WriteString(" : ")
				rec(c[keys[i]], indent+"\t")
				if i > 0 {
					b.WriteString(" ,")
				}
				b.WriteString("\n")
			}
			b.WriteString(indent + "}")
		case []any:
			b.WriteString("[ ")
			for i, x := range c {
				if i > 0 {
					b.WriteString(" , ")
				}
				rec(x, indent)
			}
			b.WriteString(" ]")
		default:
			x, _ := json.Marshal(c)
			b.Write(x)
		}
	}
	rec(v, "")
	b.WriteString("\n")
	return []byte(b.String())
}
