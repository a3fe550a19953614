// Variants of a generated value: another body the schema accepts whose
// fingerprint differs, and the JSON pointer and canonical-form helpers
// they need.

package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

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
