package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// versioner computes the automatic schema version of operations: a hash of
// the response statuses, media types and schemas, where every schema reached
// through a $ref (a named schema) is hashed once and stands in its users'
// hashes as its own hash, Merkle-style. Recursive schemas are grouped into
// strongly connected components (Tarjan) and hashed as one unit, each member
// by name. The work is linear in the size of the document, whatever its
// sharing and recursion (Stripe's schemas are both), and a version changes
// exactly when something reachable from the operation's responses does.
type versioner struct {
	names map[*openapi3.Schema]string // named schema -> its name (first $ref seen, or its component)
	deep  map[*openapi3.Schema]string // named schema -> hash of everything it reaches

	// Tarjan's state.
	next    int
	index   map[*openapi3.Schema]int
	low     map[*openapi3.Schema]int
	onStack map[*openapi3.Schema]bool
	stack   []*openapi3.Schema
}

func newVersioner(doc *openapi3.T) *versioner {
	v := &versioner{names: map[*openapi3.Schema]string{}, deep: map[*openapi3.Schema]string{},
		index: map[*openapi3.Schema]int{}, low: map[*openapi3.Schema]int{}, onStack: map[*openapi3.Schema]bool{}}
	if doc.Components != nil {
		for _, name := range sortedKeys(doc.Components.Schemas) {
			if sr := doc.Components.Schemas[name]; sr != nil && sr.Value != nil && v.names[sr.Value] == "" {
				v.names[sr.Value] = "#/components/schemas/" + name
			}
		}
	}
	return v
}

// of returns the 12-hex-digit version of op's responses.
func (v *versioner) of(op *openapi3.Operation) string {
	var parts []any
	if op.Responses != nil {
		for _, status := range op.Responses.Keys() {
			rr := op.Responses.Value(status)
			if rr == nil || rr.Value == nil {
				continue
			}
			content := map[string]any{}
			for _, mt := range sortedKeys(rr.Value.Content) {
				content[mt] = v.canon(rr.Value.Content[mt].Schema, nil)
			}
			parts = append(parts, []any{status, content})
		}
	}
	return hashOf(parts)[:12]
}

func hashOf(x any) string {
	data, err := json.Marshal(x)
	if err != nil {
		panic(err) // canonical forms hold only strings, numbers, bools, slices and maps
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// named reports whether sr is a reference, and makes sure its target has a
// deep hash or is on Tarjan's stack.
func (v *versioner) named(sr *openapi3.SchemaRef) bool {
	if sr.Ref == "" {
		return false
	}
	if v.names[sr.Value] == "" {
		v.names[sr.Value] = sr.Ref
	}
	if _, seen := v.index[sr.Value]; !seen {
		v.connect(sr.Value)
	}
	return true
}

// connect is Tarjan's strongconnect for a named schema.
func (v *versioner) connect(s *openapi3.Schema) {
	v.index[s], v.low[s] = v.next, v.next
	v.next++
	v.stack = append(v.stack, s)
	v.onStack[s] = true
	v.edges(s, func(t *openapi3.Schema) {
		if _, seen := v.index[t]; !seen {
			v.connect(t)
			v.low[s] = min(v.low[s], v.low[t])
		} else if v.onStack[t] {
			v.low[s] = min(v.low[s], v.index[t])
		}
	})
	if v.low[s] != v.index[s] {
		return
	}
	// s is the root of a component: pop it and hash it.
	i := len(v.stack) - 1
	for v.stack[i] != s {
		i--
	}
	members := slices.Clone(v.stack[i:])
	v.stack = v.stack[:i]
	scc := map[*openapi3.Schema]bool{}
	for _, m := range members {
		v.onStack[m] = false
		scc[m] = true
	}
	if len(members) == 1 && !v.selfLoop(s) {
		v.deep[s] = hashOf([]any{"schema", v.canon(&openapi3.SchemaRef{Value: s}, nil)})
		return
	}
	sort.Slice(members, func(i, j int) bool { return v.names[members[i]] < v.names[members[j]] })
	var unit []any
	for _, m := range members {
		unit = append(unit, []any{v.names[m], v.canon(&openapi3.SchemaRef{Value: m}, scc)})
	}
	h := hashOf(unit)
	for _, m := range members {
		v.deep[m] = hashOf([]any{"recursive", v.names[m], h})
	}
}

func (v *versioner) selfLoop(s *openapi3.Schema) bool {
	loop := false
	v.edges(s, func(t *openapi3.Schema) { loop = loop || t == s })
	return loop
}

// edges calls fn with every named schema that s's own (inline) body
// references directly.
func (v *versioner) edges(s *openapi3.Schema, fn func(*openapi3.Schema)) {
	var walk func(sr *openapi3.SchemaRef, top bool)
	walk = func(sr *openapi3.SchemaRef, top bool) {
		if sr == nil || sr.Value == nil {
			return
		}
		if !top && sr.Ref != "" {
			if v.names[sr.Value] == "" {
				v.names[sr.Value] = sr.Ref
			}
			fn(sr.Value)
			return
		}
		forSubschemas(sr.Value, func(_ string, sub *openapi3.SchemaRef) { walk(sub, false) })
	}
	walk(&openapi3.SchemaRef{Value: s}, true)
}

// forSubschemas calls fn with each subschema that shapes a JSON value, in a
// fixed order.
func forSubschemas(s *openapi3.Schema, fn func(kw string, sub *openapi3.SchemaRef)) {
	for _, k := range sortedKeys(s.Properties) {
		fn("properties", s.Properties[k])
	}
	if s.Items != nil {
		fn("items", s.Items)
	}
	if s.AdditionalProperties.Schema != nil {
		fn("additionalProperties", s.AdditionalProperties.Schema)
	}
	for _, l := range []struct {
		kw   string
		list openapi3.SchemaRefs
	}{{"allOf", s.AllOf}, {"oneOf", s.OneOf}, {"anyOf", s.AnyOf}} {
		for _, sub := range l.list {
			fn(l.kw, sub)
		}
	}
}

// canon is the part of a schema that shapes a response body; json.Marshal
// sorts its map keys. A named schema stands as its deep hash, or, inside its
// own recursive component scc, as its name.
func (v *versioner) canon(sr *openapi3.SchemaRef, scc map[*openapi3.Schema]bool) any {
	if sr == nil || sr.Value == nil {
		return nil
	}
	s := sr.Value
	if sr.Ref != "" && v.named(sr) {
		if scc[s] {
			return map[string]any{"$recursive": v.names[s]}
		}
		return map[string]any{"$hash": v.deep[s]}
	}
	m := map[string]any{}
	types, nullable := typesOf(s)
	if len(types) > 0 {
		m["type"] = types
	}
	if nullable {
		m["nullable"] = true
	}
	if s.Format != "" {
		m["format"] = s.Format
	}
	if len(s.Enum) > 0 {
		m["enum"] = s.Enum
	}
	if s.WriteOnly {
		m["writeOnly"] = true
	}
	if len(s.Required) > 0 {
		r := slices.Clone(s.Required)
		sort.Strings(r)
		m["required"] = r
	}
	if d := s.Discriminator; d != nil {
		m["discriminator"] = map[string]any{"propertyName": d.PropertyName, "mapping": d.Mapping}
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for k, p := range s.Properties {
			props[k] = v.canon(p, scc)
		}
		m["properties"] = props
	}
	if s.Items != nil {
		m["items"] = v.canon(s.Items, scc)
	}
	if s.AdditionalProperties.Schema != nil {
		m["additionalProperties"] = v.canon(s.AdditionalProperties.Schema, scc)
	} else if s.AdditionalProperties.Has != nil {
		m["additionalProperties"] = *s.AdditionalProperties.Has
	}
	for kw, list := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "oneOf": s.OneOf, "anyOf": s.AnyOf} {
		if len(list) > 0 {
			l := make([]any, len(list))
			for i, x := range list {
				l[i] = v.canon(x, scc)
			}
			m[kw] = l
		}
	}
	return m
}
