package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemaVersion is a stable hash of the operation's response schemas: status
// codes, media types and each schema with its $refs resolved.
func schemaVersion(op *openapi3.Operation) string {
	var parts []any
	if op.Responses != nil {
		for _, status := range op.Responses.Keys() {
			rr := op.Responses.Value(status)
			if rr == nil || rr.Value == nil {
				continue
			}
			content := map[string]any{}
			for _, mt := range sortedKeys(rr.Value.Content) {
				content[mt] = canonSchema(rr.Value.Content[mt].Schema, map[*openapi3.Schema]bool{})
			}
			parts = append(parts, []any{status, content})
		}
	}
	data, _ := json.Marshal(parts)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// canonSchema is the part of a schema that shapes a response body, with
// refs inlined and cycles cut; json.Marshal sorts its map keys.
func canonSchema(sr *openapi3.SchemaRef, stack map[*openapi3.Schema]bool) any {
	if sr == nil || sr.Value == nil {
		return nil
	}
	s := sr.Value
	if stack[s] {
		return map[string]any{"$recursive": sr.Ref}
	}
	stack[s] = true
	defer delete(stack, s)
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
	if len(s.Required) > 0 {
		r := append([]string(nil), s.Required...)
		sort.Strings(r)
		m["required"] = r
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for k, v := range s.Properties {
			props[k] = canonSchema(v, stack)
		}
		m["properties"] = props
	}
	if s.Items != nil {
		m["items"] = canonSchema(s.Items, stack)
	}
	if s.AdditionalProperties.Schema != nil {
		m["additionalProperties"] = canonSchema(s.AdditionalProperties.Schema, stack)
	} else if s.AdditionalProperties.Has != nil {
		m["additionalProperties"] = *s.AdditionalProperties.Has
	}
	for kw, list := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "oneOf": s.OneOf, "anyOf": s.AnyOf} {
		if len(list) > 0 {
			var l []any
			for _, x := range list {
				l = append(l, canonSchema(x, stack))
			}
			m[kw] = l
		}
	}
	return m
}
