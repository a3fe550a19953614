package idemimpl

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// formNode is a form, a multipart body or a deepObject parameter as sent:
// names with their bracket paths (metadata[order], items[0][price],
// expand[]) become a tree whose leaves are the values as strings. The
// schema turns it into a typed Value (coerce). A node costs a few words:
// its children are a slice, indexed by a map only once there are many, so
// that a name of many short levels does not cost a map per level.
type formNode struct {
	name  string
	vals  []string
	kids  []*formNode          // in the order first seen
	index map[string]*formNode // kids by name, once there are more than indexAfter
}

const indexAfter = 8

// kid returns the child named name, or nil.
func (n *formNode) kid(name string) *formNode {
	if n.index != nil {
		return n.index[name]
	}
	for _, c := range n.kids {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (n *formNode) child(name string) *formNode {
	if c := n.kid(name); c != nil {
		return c
	}
	c := &formNode{name: name}
	n.kids = append(n.kids, c)
	switch {
	case n.index != nil:
		n.index[name] = c
	case len(n.kids) > indexAfter:
		n.index = make(map[string]*formNode, 2*len(n.kids))
		for _, k := range n.kids {
			n.index[k.name] = k
		}
	}
	return c
}

// add stores value at the bracket path of key: "a[b][0]", "a[]". The
// caller has checked the key against the limits (checkName).
func (n *formNode) add(key, value string) error {
	name, rest, _ := strings.Cut(key, "[")
	if name == "" {
		return fmt.Errorf("name %q is empty before its brackets", key)
	}
	cur := n.child(name)
	if rest != "" {
		rest = "[" + rest
	}
	for rest != "" {
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 {
			return fmt.Errorf("name %q has unbalanced brackets", key)
		}
		tok := rest[1:end]
		rest = rest[end+1:]
		if tok == "" {
			if rest != "" {
				return fmt.Errorf("name %q: [] may only end a name", key)
			}
			break
		}
		cur = cur.child(tok)
	}
	cur.vals = append(cur.vals, value)
	return nil
}

// put stores value under key: as one name when the object schema s
// declares a property of that very name ("file[]", PHP's way to name a
// list), else at key's bracket path (add). The caller has checked the key
// against the limits (checkName).
func (n *formNode) put(key, value string, s *Schema) error {
	if strings.IndexByte(key, '[') > 0 && findProp(s.Props, key) != nil {
		c := n.child(key)
		c.vals = append(c.vals, value)
		return nil
	}
	return n.add(key, value)
}

// parseForm parses an application/x-www-form-urlencoded body into a tree,
// typed later by the object schema s. Percent-encoding and '+' are
// decoded; names use bracket notation. The number of fields and each name
// are checked against lim as they come, before the name adds to the tree.
func parseForm(body string, s *Schema, lim *Limits) (*formNode, error) {
	root := &formNode{}
	fields := 0
	for pair := range strings.SplitSeq(body, "&") {
		if pair == "" {
			continue
		}
		if fields++; fields > lim.MaxFields {
			return nil, &SyntaxError{Offset: -1, Rule: "maxFields", Msg: fmt.Sprintf("form has more than %d fields", lim.MaxFields)}
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, &SyntaxError{Offset: -1, Msg: fmt.Sprintf("form name %s is not percent-encoded correctly", shortName(k))}
		}
		if err := checkName("form name", key, 1, lim); err != nil {
			return nil, err
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, &SyntaxError{Offset: -1, Msg: fmt.Sprintf("form value of %q is not percent-encoded correctly", key)}
		}
		if !utf8.ValidString(key) {
			return nil, &SyntaxError{Offset: -1, Msg: fmt.Sprintf("form name %q is not valid UTF-8", key)}
		}
		if !utf8.ValidString(val) {
			return nil, &SyntaxError{Offset: -1, Msg: fmt.Sprintf("form value of %q is not valid UTF-8", key)}
		}
		if err := root.put(key, val, s); err != nil {
			return nil, &SyntaxError{Offset: -1, Msg: "form " + err.Error()}
		}
	}
	return root, nil
}

// deepObjectNode collects a deepObject query parameter: name[prop]=value,
// with Stripe's nesting (name[a][b]) and lists (name[]=x, name[0]=x). Each
// name is checked against the limits before it adds to the tree.
func deepObjectNode(query url.Values, name string, vd *validator, lim *Limits) (*formNode, bool) {
	root := &formNode{}
	keys := make([]string, 0, 4)
	for k := range query {
		if k == name || strings.HasPrefix(k, name+"[") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkName("name", k, 0, lim); err != nil {
			vd.fail(err.Rule, err.Msg)
			return nil, false
		}
		for _, v := range query[k] {
			if err := root.add(k, v); err != nil {
				vd.fail("syntax", err.Error())
				return nil, false
			}
		}
	}
	return root.kid(name), true
}

// splitUnexploded splits the values of top-level form members whose
// encoding has explode: false at commas, refusing more items than values
// allows before it splits.
func splitUnexploded(n *formNode, names []string, values *budget) error {
	items := 0
	for _, name := range names {
		if c := n.kid(name); c != nil {
			for _, v := range c.vals {
				items += strings.Count(v, ",") + 1
			}
		}
	}
	if !values.fits(items) {
		return &SyntaxError{Offset: -1, Rule: "maxValues", Msg: values.detail()}
	}
	for _, name := range names {
		c := n.kid(name)
		if c == nil {
			continue
		}
		var vals []string
		for _, v := range c.vals {
			vals = append(vals, strings.Split(v, ",")...)
		}
		c.vals = vals
	}
	return nil
}

// coerce turns a tree of strings into a Value typed by schema idx:
// "5" becomes a number where the schema wants one, brackets become objects
// or, with indices, arrays. What cannot be typed is a violation.
func (vd *validator) coerce(n *formNode, idx int) Value {
	s := &Schema{}
	if idx > 0 && idx < len(vd.t.List) {
		s = &vd.t.List[idx]
	}
	if members := append(s.AnyOf[:len(s.AnyOf):len(s.AnyOf)], s.OneOf...); len(members) > 0 && s.Types == 0 && len(s.Props) == 0 {
		for _, m := range members {
			trial := &validator{t: vd.t, in: vd.in, name: vd.name, path: append([]string(nil), vd.path...), values: vd.values}
			mark := vd.values.mark()
			v := trial.coerce(n, m)
			if len(trial.out) == 0 && trial.matches(&v, m) {
				return v
			}
			vd.values.reset(mark) // counted once, as the next trial's or below

		}
	}
	if !vd.spend() {
		return Value{}
	}
	if len(n.kids) > 0 {
		if len(n.vals) > 0 {
			vd.fail("syntax", "is given both as a value and with [brackets]")
			return Value{}
		}
		if s.Types&TypeArray != 0 || s.Items > 0 && s.Types&TypeObject == 0 {
			return vd.indexed(n, s)
		}
		if s.Types != 0 && s.Types&TypeObject == 0 {
			vd.fail("type", typeDetail(&Value{Kind: KindObject}, s.Types))
			return Value{}
		}
		return vd.members(n, s)
	}
	if s.Types&TypeArray != 0 && (s.Types&^(TypeArray|TypeNull) == 0 || len(n.vals) != 1) {
		if !vd.spendN(len(n.vals)) {
			return Value{}
		}
		v := Value{Kind: KindArray, Items: make([]Value, 0, len(n.vals))}
		for i, str := range n.vals {
			vd.push(strconv.Itoa(i))
			v.Items = append(v.Items, vd.scalar(str, vd.schema(s.Items)))
			vd.pop()
		}
		return v
	}
	if len(n.vals) > 1 {
		vd.fail("syntax", fmt.Sprintf("is given %d times; it takes one value", len(n.vals)))
		return Value{}
	}
	if len(n.vals) == 0 {
		return Value{Kind: KindString}
	}
	return vd.scalar(n.vals[0], s)
}

func (vd *validator) schema(idx int) *Schema {
	if idx > 0 && idx < len(vd.t.List) {
		return &vd.t.List[idx]
	}
	return &Schema{}
}

// members types the children of n as the members of an object.
func (vd *validator) members(n *formNode, s *Schema) Value {
	v := Value{Kind: KindObject, Members: make([]Member, 0, len(n.kids))}
	for _, c := range n.kids {
		name := c.name
		sub := s.AdditionalProperties
		if p := findProp(s.Props, name); p != nil {
			sub = p.Schema
		} else if sub < 0 {
			sub = 0 // the validator reports the member
		}
		vd.push(name)
		v.Members = append(v.Members, Member{Name: name, Value: vd.coerce(c, sub)})
		vd.pop()
		if vd.values.spent() {
			return Value{}
		}
	}
	v.SortMembers()
	return v
}

var errIndices = errors.New("array indices must run from 0 without gaps")

// indexed types the children of n, named 0, 1, ..., as array items.
func (vd *validator) indexed(n *formNode, s *Schema) Value {
	items := make([]Value, len(n.kids))
	for _, c := range n.kids {
		name := c.name
		i, err := strconv.Atoi(name)
		if err != nil || i < 0 || i >= len(items) || strconv.Itoa(i) != name || items[i].Kind != KindNull {
			vd.fail("syntax", errIndices.Error())
			return Value{}
		}
		vd.push(name)
		items[i] = vd.coerce(c, s.Items)
		vd.pop()
		if vd.values.spent() {
			return Value{}
		}
		if items[i].Kind == KindNull {
			items[i] = Value{Kind: KindString} // a placeholder that is never null
		}
	}
	return Value{Kind: KindArray, Items: items}
}

// scalar types one string value as schema s allows: a boolean, a number, a
// declared enum value, else a string.
func (vd *validator) scalar(str string, s *Schema) Value {
	if s.Types == 0 && len(s.Enum) > 0 {
		for _, e := range s.Enum {
			v, err := ParseJSON([]byte(e))
			if err == nil && (v.Kind == KindString && v.Str == str || v.Kind != KindString && e == str) {
				return v
			}
		}
	}
	if s.Types&TypeBoolean != 0 && (str == "true" || str == "false") {
		return Value{Kind: KindBool, Bool: str == "true"}
	}
	if s.Types&(TypeInteger|TypeNumber) != 0 {
		if n, err := ParseNumber(str); err == nil && (n.IsInt || s.Types&TypeNumber != 0) {
			return NumberValue(n)
		}
	}
	if s.Types == 0 || s.Types&TypeString != 0 {
		return Value{Kind: KindString, Str: str}
	}
	if s.Types&TypeNull != 0 && str == "null" {
		return Value{Kind: KindNull}
	}
	vd.fail("type", typeDetail(&Value{Kind: KindString}, s.Types)+fmt.Sprintf(", not %q", str))
	return Value{}
}
