// Validating a decoded request value against the schema table (schema.go):
// each violation named by its JSON pointer, its rule and what was wrong.

package idemimpl

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// mode says what a value is validated as.
type mode uint8

const (
	modeRequest mode = iota // a request body or parameter
	modePatch               // an RFC 7396 merge patch: members optional, required ones never null
)

// validator collects the violations of one value.
type validator struct {
	t    *Schemas
	in   string // body, path, query, header, cookie
	name string // parameter name
	path []string
	out  []idemproblem.Violation
	mode mode
	// known are the member names an enclosing allOf declares, while its
	// branches are validated.
	known []string
	// values is what the value being decoded may still hold (coerce).
	values *budget
}

func (vd *validator) fail(rule, detail string) {
	vd.out = append(vd.out, idemproblem.Violation{In: vd.in, Parameter: vd.name, Pointer: vd.pointer(), Rule: rule, Detail: detail})
}

func (vd *validator) pointer() string {
	if len(vd.path) == 0 {
		if vd.name != "" {
			return ""
		}
		return "#"
	}
	var b strings.Builder
	b.WriteByte('#')
	for _, t := range vd.path {
		b.WriteByte('/')
		b.WriteString(jsonkit.EscapeToken(t))
	}
	return b.String()
}

func (vd *validator) push(tok string) { vd.path = append(vd.path, tok) }

func (vd *validator) pop() { vd.path = vd.path[:len(vd.path)-1] }

// typeOf is the set of types v is an instance of.
func typeOf(v *Value) Types {
	switch v.Kind {
	case KindNull:
		return TypeNull
	case KindBool:
		return TypeBoolean
	case KindNumber:
		if v.isInt {
			return TypeInteger | TypeNumber
		}
		return TypeNumber
	case KindString:
		return TypeString
	case KindArray:
		return TypeArray
	}
	return TypeObject
}

// validate checks v against schema idx, appending violations.
func (vd *validator) validate(v *Value, idx int) {
	if idx <= 0 || idx >= len(vd.t.List) {
		return
	}
	s, c := &vd.t.List[idx], &vd.t.compiled[idx]
	if s.Nullable && v.Kind == KindNull {
		return
	}
	if s.Types != 0 && typeOf(v)&s.Types == 0 {
		vd.fail("type", typeDetail(v, s.Types))
		return
	}
	switch v.Kind {
	case KindNumber:
		vd.number(v, s, c)
	case KindString:
		if !s.NoValidate {
			vd.str(v.Str, s, c)
		}
	case KindArray:
		vd.array(v, s)
	case KindObject:
		known := vd.known
		if len(c.known) > 0 {
			known = append(known[:len(known):len(known)], c.known...)
			sort.Strings(known)
		}
		vd.object(v, s, known)
	}
	if !s.NoValidate && c.enum != nil && !c.enum[string(AppendJSON(nil, v, nil))] {
		vd.fail(enumRule(s), "must be "+oneOf(s.Enum))
	}
	if len(s.AllOf) > 0 {
		outer := vd.known
		vd.known = c.known
		for _, sub := range s.AllOf {
			vd.validate(v, sub)
		}
		vd.known = outer
	}
	if len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		vd.union(v, s)
	}
	if s.Not > 0 && !s.NoValidate && vd.matches(v, s.Not) {
		vd.fail("not", "must not match the schema it is declared not to match")
	}
}

func enumRule(s *Schema) string {
	if len(s.Enum) == 1 {
		return "const"
	}
	return "enum"
}

func oneOf(enc []string) string {
	if len(enc) == 1 {
		return enc[0]
	}
	shown := enc
	if len(shown) > 10 {
		shown = shown[:10]
	}
	s := "one of " + strings.Join(shown, ", ")
	if len(enc) > len(shown) {
		s += fmt.Sprintf(" (and %d more)", len(enc)-len(shown))
	}
	return s
}

// matches reports whether v is valid against schema idx.
func (vd *validator) matches(v *Value, idx int) bool {
	sub := validator{t: vd.t, in: vd.in, name: vd.name, mode: vd.mode}
	sub.validate(v, idx)
	return len(sub.out) == 0
}

func (vd *validator) union(v *Value, s *Schema) {
	members, kw := s.OneOf, "oneOf"
	if len(members) == 0 {
		members, kw = s.AnyOf, "anyOf"
	}
	if s.Discriminator != "" && v.Kind == KindObject {
		d := v.Member(s.Discriminator)
		if d == nil || d.Kind != KindString {
			vd.push(s.Discriminator)
			vd.fail("discriminator", "is required: it selects the schema of the object")
			vd.pop()
			return
		}
		var vals []string
		for _, m := range s.Mapping {
			if m.Value == d.Str {
				vd.validate(v, m.Schema)
				return
			}
			vals = append(vals, strconv.Quote(m.Value))
		}
		vd.push(s.Discriminator)
		vd.fail("discriminator", "must be "+oneOf(vals))
		vd.pop()
		return
	}
	var matched []int
	for i, m := range members {
		if vd.matches(v, m) {
			matched = append(matched, i)
			if kw == "anyOf" {
				return
			}
		}
	}
	switch {
	case len(matched) == 0 && len(members) == 1:
		vd.validate(v, members[0]) // the member's own violations say more
	case len(matched) == 0:
		vd.fail(kw, fmt.Sprintf("must match %s the %d schemas it may take", map[string]string{"oneOf": "exactly one of", "anyOf": "one of"}[kw], len(members)))
	case len(matched) > 1:
		vd.fail(kw, fmt.Sprintf("matches %d of the schemas it may take (%s), exactly one must match", len(matched), intList(matched)))
	}
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func typeDetail(v *Value, t Types) string {
	var names []string
	for _, n := range []struct {
		t    Types
		name string
	}{{TypeObject, "an object"}, {TypeArray, "an array"}, {TypeString, "a string"}, {TypeInteger, "an integer"},
		{TypeNumber, "a number"}, {TypeBoolean, "a boolean"}, {TypeNull, "null"}} {
		if t&n.t != 0 && !(n.t == TypeInteger && t&TypeNumber != 0) {
			names = append(names, n.name)
		}
	}
	want := strings.Join(names, " or ")
	if v.Kind == KindNull {
		return "cannot be null (must be " + want + ")"
	}
	if f := v.Num().Float; v.Kind == KindNumber && t&TypeInteger != 0 && f == math.Trunc(f) {
		return "must be " + want + " between -2^63 and 2^63-1"
	}
	return "must be " + want
}

func (vd *validator) number(v *Value, s *Schema, c *compiled) {
	num := v.Num()
	n := &num
	switch s.Format {
	case FormatInt32:
		if n.IsInt && (n.Int < math.MinInt32 || n.Int > math.MaxInt32) && s.Types&TypeNumber == 0 {
			vd.fail("format", "must be an integer between -2^31 and 2^31-1 (int32)")
			return
		}
	case FormatFloat:
		if math.Abs(n.Float) > math.MaxFloat32 {
			vd.fail("format", "must be within the range of a 32-bit float")
			return
		}
	}
	if s.NoValidate || s.Has&(HasMinimum|HasMaximum|HasMultipleOf) == 0 {
		return
	}
	if n.IsInt && c.intLimits {
		if s.Has&HasMinimum != 0 && (n.Int < c.minInt || s.ExclusiveMinimum && n.Int == c.minInt) {
			vd.fail(minRule(s.ExclusiveMinimum), boundDetail(s.ExclusiveMinimum, "greater than", "at least", s.Minimum))
		}
		if s.Has&HasMaximum != 0 && (n.Int > c.maxInt || s.ExclusiveMaximum && n.Int == c.maxInt) {
			vd.fail(maxRule(s.ExclusiveMaximum), boundDetail(s.ExclusiveMaximum, "less than", "at most", s.Maximum))
		}
	} else if s.Has&(HasMinimum|HasMaximum) != 0 {
		x, _ := new(big.Rat).SetString(n.Text)
		if c.min != nil && (x.Cmp(c.min) < 0 || s.ExclusiveMinimum && x.Cmp(c.min) == 0) {
			vd.fail(minRule(s.ExclusiveMinimum), boundDetail(s.ExclusiveMinimum, "greater than", "at least", s.Minimum))
		}
		if c.max != nil && (x.Cmp(c.max) > 0 || s.ExclusiveMaximum && x.Cmp(c.max) == 0) {
			vd.fail(maxRule(s.ExclusiveMaximum), boundDetail(s.ExclusiveMaximum, "less than", "at most", s.Maximum))
		}
	}
	if c.mult != nil && c.mult.Sign() > 0 {
		x, _ := new(big.Rat).SetString(n.Text)
		if !x.Quo(x, c.mult).IsInt() {
			vd.fail("multipleOf", "must be a multiple of "+s.MultipleOf)
		}
	}
}

func minRule(excl bool) string {
	if excl {
		return "exclusiveMinimum"
	}
	return "minimum"
}

func maxRule(excl bool) string {
	if excl {
		return "exclusiveMaximum"
	}
	return "maximum"
}

func boundDetail(excl bool, strict, loose, limit string) string {
	if excl {
		return "must be " + strict + " " + limit
	}
	return "must be " + loose + " " + limit
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + one + "s"
}

func (vd *validator) str(s string, sc *Schema, c *compiled) {
	if sc.Has&(HasMinLength|HasMaxLength) != 0 {
		n := len([]rune(s))
		if sc.Has&HasMinLength != 0 && n < sc.MinLength {
			vd.fail("minLength", "must be at least "+plural(sc.MinLength, "character")+" long")
		}
		if sc.Has&HasMaxLength != 0 && n > sc.MaxLength {
			vd.fail("maxLength", "must be at most "+plural(sc.MaxLength, "character")+" long")
		}
	}
	if c.pattern != nil && !c.pattern.MatchString(s) {
		vd.fail("pattern", "must match the pattern "+sc.Pattern)
	}
	if sc.Format != FormatNone {
		if msg := checkFormat(sc.Format, s); msg != "" {
			vd.fail("format", msg)
		}
	}
}

func (vd *validator) array(v *Value, s *Schema) {
	if !s.NoValidate {
		n := len(v.Items)
		if s.Has&HasMinItems != 0 && n < s.MinItems {
			vd.fail("minItems", "must have at least "+plural(s.MinItems, "item"))
		}
		if s.Has&HasMaxItems != 0 && n > s.MaxItems {
			vd.fail("maxItems", "must have at most "+plural(s.MaxItems, "item"))
		}
		if s.UniqueItems && n > 1 {
			seen := make(map[string]int, n)
			for i := range v.Items {
				enc := string(AppendJSON(nil, &v.Items[i], nil))
				if j, ok := seen[enc]; ok {
					vd.fail("uniqueItems", fmt.Sprintf("items %d and %d are equal; items must be unique", j, i))
					break
				}
				seen[enc] = i
			}
		}
	}
	if s.Items > 0 {
		for i := range v.Items {
			vd.push(strconv.Itoa(i))
			vd.validate(&v.Items[i], s.Items)
			vd.pop()
		}
	}
}

func (vd *validator) object(v *Value, s *Schema, known []string) {
	vd.known = nil // not below this object
	defer func() { vd.known = known }()
	for i := range v.Members {
		m := &v.Members[i]
		vd.push(m.Name)
		if p := findProp(s.Props, m.Name); p != nil {
			ps := &vd.t.List[p.Schema]
			switch {
			case ps.ReadOnly && !s.NoValidate:
				vd.fail("readOnly", "is read-only: the server sets it")
			case vd.mode == modePatch && m.Value.Kind == KindNull && p.Required:
				vd.fail("required", "is required and cannot be removed")
			// Otherwise a patch's null is validated like any value: the
			// typed request keeps null apart from absent only where the
			// schema is nullable (idemtype.Nullable); elsewhere a removal
			// would reach the handler as "leave it alone".
			default:
				vd.validate(&m.Value, p.Schema)
			}
		} else if isKnown(known, m.Name) {
			// another allOf branch declares it and validates it
		} else if d := foldProp(s.Props, known, m.Name); d != "" {
			vd.fail("properties", fmt.Sprintf("differs from the declared member %q only in case", d))
		} else if s.AdditionalProperties == NoAdditional {
			if !s.NoValidate {
				vd.fail("additionalProperties", "is not a member the schema declares")
			}
		} else {
			vd.validate(&m.Value, s.AdditionalProperties)
		}
		vd.pop()
	}
	if s.NoValidate {
		return
	}
	if vd.mode != modePatch {
		for _, p := range s.Props {
			if p.Required && !vd.t.List[p.Schema].ReadOnly && v.Member(p.Name) == nil {
				vd.push(p.Name)
				vd.fail("required", "is required")
				vd.pop()
			}
		}
	}
	n := len(v.Members)
	if s.Has&HasMinProperties != 0 && n < s.MinProperties {
		vd.fail("minProperties", "must have at least "+plural(s.MinProperties, "member"))
	}
	if s.Has&HasMaxProperties != 0 && n > s.MaxProperties {
		vd.fail("maxProperties", "must have at most "+plural(s.MaxProperties, "member"))
	}
}

func findProp(props []Prop, name string) *Prop {
	lo, hi := 0, len(props)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case props[m].Name == name:
			return &props[m]
		case props[m].Name < name:
			lo = m + 1
		default:
			hi = m
		}
	}
	return nil
}

// foldProp returns the declared property that name matches only under
// Unicode case folding, as encoding/json would match it; "" for none.
func foldProp(props []Prop, known []string, name string) string {
	for i := range props {
		if strings.EqualFold(props[i].Name, name) {
			return props[i].Name
		}
	}
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return ""
}

func isKnown(known []string, name string) bool {
	i := sort.SearchStrings(known, name)
	return i < len(known) && known[i] == name
}
