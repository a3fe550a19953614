package load

import (
	"regexp"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-openapi/jsonpointer"
	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// The document as YAML nodes (a JSON document is YAML too), for what
// kin-openapi's types do not keep: lines, keys as written, and null values.

// Nodes parses the document into YAML nodes; it returns the document's
// root node.
func Nodes(data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	return root.Content[0], nil
}

// Walk calls fn with every mapping and sequence node of n and below, with
// its JSON pointer (ptr is n's). A node reached through an alias is not
// visited again: what an anchor holds is reported where the anchor is.
// When fn returns false, Walk does not descend into the node.
func Walk(n *yaml.Node, ptr string, fn func(ptr string, n *yaml.Node) bool) {
	switch n.Kind {
	case yaml.MappingNode:
		if !fn(ptr, n) {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			Walk(n.Content[i+1], ptr+"/"+jsonkit.EscapeToken(n.Content[i].Value), fn)
		}
	case yaml.SequenceNode:
		if !fn(ptr, n) {
			return
		}
		for i, c := range n.Content {
			Walk(c, ptr+"/"+strconv.Itoa(i), fn)
		}
	}
}

// Member returns the value of key in mapping node n, nil when n is not a
// mapping or has no such key.
func Member(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// At returns the node at JSON pointer ptr below n, or the deepest node on
// the way to it that exists; ok says whether it is the node itself.
func At(n *yaml.Node, ptr string) (found *yaml.Node, ok bool) {
	tokens, err := tokensOf(ptr)
	if err != nil {
		return n, false
	}
	found, depth, _ := Follow(n, tokens)
	return found, depth == len(tokens)
}

// Follow follows tokens (a parsed JSON pointer) from n through mappings
// and sequences (and aliases): it returns the deepest node it reaches, how
// many tokens it took, and the line of that node's key in its mapping (of
// the node itself in a sequence, or n's line when it took none).
func Follow(n *yaml.Node, tokens []string) (found *yaml.Node, depth, line int) {
	line = n.Line
	for _, tok := range tokens {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					next, line = n.Content[i+1], n.Content[i].Line
					break
				}
			}
		case yaml.SequenceNode:
			if i, ok := jsonkit.Index(tok, len(n.Content)); ok {
				next = n.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return n, depth, line
		}
		n = next
		depth++
	}
	return n, depth, line
}

// tokensOf parses ptr; "" (the whole document) has no tokens.
func tokensOf(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	return jsonkit.ParsePointer(ptr)
}

// constNull matches a `const` key whose value is null, in YAML or JSON: a
// quick test that spares the documents without one a parse into nodes.
var constNull = regexp.MustCompile(`(?m)(?:^|[\s{,])["']?const["']?[ \t]*:[ \t]*(?:null|Null|NULL|~)?[ \t]*(?:$|[,}#])`)

// NullConsts spells `enum: [null]` where a schema of the document says
// `const: null`: kin-openapi holds const as a Go value, in which null and
// absent are both nil, so every reader of the document would take the
// schema for one that allows any value. Only the document's own schemas
// are seen, not those of files it refers to.
func NullConsts(data []byte, doc *openapi3.T) {
	if !constNull.Match(data) {
		return
	}
	root, err := Nodes(data)
	if err != nil {
		return
	}
	Walk(root, "", func(ptr string, n *yaml.Node) bool {
		if c := Member(n, "const"); c != nil && c.Kind == yaml.ScalarNode && c.Tag == "!!null" && Member(n, "enum") == nil {
			if s, ok := Lookup(doc, ptr).(*openapi3.Schema); ok && s.Const == nil && s.Enum == nil {
				s.Enum = []any{nil}
			}
		}
		return true
	})
}

// Lookup returns what the loaded document holds at JSON pointer ptr (a
// *openapi3.Schema for a schema), nil when it holds nothing there. A
// pointer that passes through a $ref is not followed.
func Lookup(doc *openapi3.T, ptr string) any {
	tokens, err := tokensOf(ptr)
	if err != nil {
		return nil
	}
	var v any = doc
	for _, tok := range tokens {
		if v, _, err = jsonpointer.GetForToken(v, tok); err != nil {
			return nil
		}
	}
	return v
}

// Line is the line of the value at JSON pointer ptr below n: of the key
// that names it in a mapping, of the item itself in a sequence; of the
// deepest value on the way when it does not exist. 0 for a pointer that
// does not parse.
func Line(n *yaml.Node, ptr string) int {
	tokens, err := tokensOf(ptr)
	if err != nil {
		return 0
	}
	_, _, line := Follow(n, tokens)
	return line
}
