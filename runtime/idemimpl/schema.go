package idemimpl

import (
	"math"
	"math/big"
	"regexp"
	"sort"
	"sync"
)

// Types is the set of JSON types a Schema allows.
type Types uint8

const (
	TypeNull Types = 1 << iota
	TypeBoolean
	TypeInteger
	TypeNumber
	TypeString
	TypeArray
	TypeObject
)

// Has says which optional limits of a Schema are set.
type Has uint16

const (
	HasMinimum Has = 1 << iota
	HasMaximum
	HasMultipleOf
	HasMinLength
	HasMaxLength
	HasMinItems
	HasMaxItems
	HasMinProperties
	HasMaxProperties
)

// Format is a value of the format keyword that the validator checks or
// that bounds a number's range.
type Format uint8

const (
	FormatNone Format = iota
	FormatInt32
	FormatInt64
	FormatFloat
	FormatDateTime
	FormatDate
	FormatUUID
	FormatEmail
	FormatURI
	FormatIPv4
	FormatIPv6
	FormatByte
	FormatBinary
)

// NoAdditional is Schema.AdditionalProperties for additionalProperties:
// false.
const NoAdditional = -1

// AnyAdditional is Schema.AdditionalProperties for additionalProperties
// that allows any member (true, {}) declared beside properties.
const AnyAdditional = -2

// Schema is the compact descriptor of one request schema that generated
// code emits, one per schema (named schemas shared), in a Schemas table.
// Other schemas are referred to by their index in the table; index 0 is the
// schema that allows any value. The zero value of a field is "no
// constraint".
type Schema struct {
	Types Types // allowed JSON types; 0: any
	// Nullable makes null valid whatever the other keywords say: OpenAPI
	// 3.0's nullable on a schema without a type (a nullable $ref wrapper).
	Nullable bool
	Format   Format
	// Enum holds the canonical JSON encodings (AppendJSON) of the allowed
	// values: enum and const.
	Enum []string
	Has  Has // which limits below are set
	// Minimum, Maximum and MultipleOf are exact decimals.
	Minimum, Maximum                   string
	ExclusiveMinimum, ExclusiveMaximum bool
	MultipleOf                         string
	MinLength, MaxLength               int // in characters (code points)
	Pattern                            string
	MinItems, MaxItems                 int
	UniqueItems                        bool
	MinProperties, MaxProperties       int
	Items                              int    // schema of array items; 0: any
	Props                              []Prop // declared properties, sorted by name
	// AdditionalProperties is the schema of undeclared members: 0 any,
	// NoAdditional for none, AnyAdditional for any beside Props that the
	// typed request keeps. Beside Props, 0 means the keyword is absent:
	// undeclared members are allowed but the typed request has no field
	// for them, so they are removed from the decoded value (prune) and
	// are not part of the fingerprint.
	AdditionalProperties int
	AllOf, AnyOf, OneOf  []int
	Not                  int // 0: no not keyword
	// Discriminator is the oneOf/anyOf discriminator's property name;
	// Mapping maps its values to member schemas.
	Discriminator string
	Mapping       []Mapping
	// Default is the canonical JSON of the default value, applied when the
	// property or parameter is absent; "" for none.
	Default string
	// ReadOnly members are refused in requests (and not required there).
	ReadOnly bool
	// NoValidate turns validation off (the config's validation.skip): only
	// what decoding needs is checked (JSON types, duplicate and
	// case-variant members).
	NoValidate bool
}

// Prop is one declared property of an object schema.
type Prop struct {
	Name     string
	Schema   int
	Required bool
}

// Mapping is one value of a discriminator and the schema it selects.
type Mapping struct {
	Value  string
	Schema int
}

// Schemas is the table of a generated package's request schemas.
type Schemas struct {
	List []Schema

	once     sync.Once
	compiled []compiled
	// skips reports that some schema skips validation (NoValidate): the
	// table's values are then all unmarshalled by encoding/json, never
	// filled (fill.go).
	skips bool
}

// compiled is what a Schema needs at run time, prepared once.
type compiled struct {
	min, max, mult *big.Rat
	minInt, maxInt int64 // when the limits are integers
	intLimits      bool
	pattern        *regexp.Regexp
	enum           map[string]bool
	def            *Value
	// known is every property name the schema declares itself or through
	// allOf, sorted: a member one allOf branch declares is not an
	// additional property of another.
	known []string
}

func (t *Schemas) compile() {
	t.once.Do(func() {
		t.compiled = make([]compiled, len(t.List))
		for i := range t.List {
			s, c := &t.List[i], &t.compiled[i]
			t.skips = t.skips || s.NoValidate
			c.min, c.max, c.mult = rat(s.Minimum), rat(s.Maximum), rat(s.MultipleOf)
			c.minInt, c.maxInt = math.MinInt64, math.MaxInt64
			c.intLimits = true
			for _, lim := range []struct {
				r   *big.Rat
				dst *int64
			}{{c.min, &c.minInt}, {c.max, &c.maxInt}} {
				if lim.r != nil {
					if !lim.r.IsInt() || !lim.r.Num().IsInt64() {
						c.intLimits = false
					} else {
						*lim.dst = lim.r.Num().Int64()
					}
				}
			}
			if s.Pattern != "" {
				// The generator compiled it; one that does not compile
				// is reported there and not emitted.
				c.pattern, _ = regexp.Compile(s.Pattern)
			}
			if len(s.Enum) > 0 {
				c.enum = make(map[string]bool, len(s.Enum))
				for _, e := range s.Enum {
					c.enum[e] = true
				}
			}
			if s.Default != "" {
				if v, err := ParseJSON([]byte(s.Default)); err == nil {
					c.def = &v
				}
			}
			if len(s.AllOf) > 0 {
				seen := map[string]bool{}
				t.collectKnown(i, map[int]bool{}, seen)
				for n := range seen {
					c.known = append(c.known, n)
				}
				sort.Strings(c.known)
			}
		}
	})
}

func (t *Schemas) collectKnown(idx int, visited map[int]bool, names map[string]bool) {
	if idx <= 0 || idx >= len(t.List) || visited[idx] {
		return
	}
	visited[idx] = true
	for _, p := range t.List[idx].Props {
		names[p.Name] = true
	}
	for _, sub := range t.List[idx].AllOf {
		t.collectKnown(sub, visited, names)
	}
}

func rat(s string) *big.Rat {
	if s == "" {
		return nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// prune removes the undeclared members of objects whose typed request
// drops them (Props without an additionalProperties keyword), below
// objects and arrays; not in or below allOf, anyOf and oneOf, whose typed
// request may keep a member one branch does not declare. What the handler
// cannot see is not part of the request: it is neither validated as the
// handler's view (uniqueItems) nor fingerprinted. It reports whether it
// removed any.
func (t *Schemas) prune(v *Value, idx int) (removed bool) {
	if idx <= 0 || idx >= len(t.List) {
		return false
	}
	s := &t.List[idx]
	if len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 {
		return false
	}
	switch v.Kind {
	case KindObject:
		// In place, by index: a loop variable's address would move every
		// member to the heap.
		kept := v.Members[:0]
		for i := range v.Members {
			m := &v.Members[i]
			if p := findProp(s.Props, m.Name); p != nil {
				removed = t.prune(&m.Value, p.Schema) || removed
			} else if len(s.Props) > 0 && s.AdditionalProperties == 0 {
				removed = true
				continue
			} else {
				removed = t.prune(&m.Value, s.AdditionalProperties) || removed
			}
			kept = append(kept, *m)
		}
		v.Members = kept
	case KindArray:
		for i := range v.Items {
			removed = t.prune(&v.Items[i], s.Items) || removed
		}
	}
	return removed
}

// applyDefaults adds the declared defaults of absent members, below
// objects, arrays and allOf; not inside anyOf or oneOf, where which member
// applies is not known. It reports whether it added any.
func (t *Schemas) applyDefaults(v *Value, idx int) (added bool) {
	if idx <= 0 || idx >= len(t.List) {
		return false
	}
	s := &t.List[idx]
	switch v.Kind {
	case KindObject:
		here := false
		for _, p := range s.Props {
			if m := v.Member(p.Name); m != nil {
				added = t.applyDefaults(m, p.Schema) || added
			} else if d := t.compiled[p.Schema].def; d != nil && !t.List[p.Schema].ReadOnly {
				v.Members = append(v.Members, Member{Name: p.Name, Value: *d})
				here = true
			}
		}
		if here {
			v.SortMembers()
			added = true
		}
		if s.AdditionalProperties > 0 {
			for i := range v.Members {
				if findProp(s.Props, v.Members[i].Name) == nil {
					added = t.applyDefaults(&v.Members[i].Value, s.AdditionalProperties) || added
				}
			}
		}
	case KindArray:
		for i := range v.Items {
			added = t.applyDefaults(&v.Items[i], s.Items) || added
		}
	}
	for _, sub := range s.AllOf {
		added = t.applyDefaults(v, sub) || added
	}
	return added
}
