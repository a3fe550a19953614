package generator

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/internal/jsonkit"
)

// danglingRefs finds the local $refs of a document (JSON or YAML) that
// point nowhere, each reported with the reference, where it is used (a
// JSON pointer and the line) and the nearest name that does exist:
//
//	openapi.yaml: line 20: #/paths/~1bookings/post/...: $ref "#/components/schemas/NewBookin" does not resolve: #/components/schemas has no NewBookin (did you mean NewBooking?)
//
// kin-openapi says only `map key "NewBookin" not found`. It runs after a
// load failed, so a spec that loads pays nothing for it.
func danglingRefs(data []byte, file string) []string {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return nil
	}
	doc := root.Content[0]
	var problems []string
	var walk func(n *yaml.Node, ptr string)
	walk = func(n *yaml.Node, ptr string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "$ref" && v.Kind == yaml.ScalarNode && strings.HasPrefix(v.Value, "#") {
					if msg := resolveLocal(doc, v.Value); msg != "" {
						problems = append(problems, fmt.Sprintf("%s: line %d: #%s: $ref %q does not resolve: %s", file, v.Line, ptr, v.Value, msg))
					}
					continue
				}
				walk(v, ptr+"/"+jsonkit.EscapeToken(k.Value))
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, ptr+"/"+strconv.Itoa(i))
			}
		case yaml.AliasNode:
			// An anchor's $refs are reported where the anchor is.
		}
	}
	walk(doc, "")
	sort.Strings(problems)
	return problems
}

// resolveLocal follows ref ("#/components/schemas/X") in doc and says what
// is missing, or returns "" when it resolves.
func resolveLocal(doc *yaml.Node, ref string) string {
	if ref == "#" {
		return ""
	}
	if !strings.HasPrefix(ref, "#/") {
		return "a local reference is #/ followed by a JSON pointer"
	}
	n, at := doc, "#"
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.MappingNode:
			var keys []string
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				keys = append(keys, n.Content[i].Value)
				if n.Content[i].Value == tok {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				return fmt.Sprintf("%s has no %s%s", at, tok, didYouMean(tok, keys))
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return fmt.Sprintf("%s has no item %s", at, tok)
			}
			n = n.Content[i]
		default:
			return fmt.Sprintf("%s is not an object", at)
		}
		at += "/" + jsonkit.EscapeToken(tok)
	}
	return ""
}
