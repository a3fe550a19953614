package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json/jsontext"
	"gopkg.in/yaml.v3"
)

// A large spec is decoded in parts, on every core: kin-openapi decodes a
// document as one JSON value, and each of its UnmarshalJSON methods decodes
// its whole object a second time into a map for the extensions, so the
// document is decoded once per level of nesting, and Paths even re-encodes
// every path item (Stripe: 0.5 s of the generator's 1.8 s). splitDoc cuts
// the document into its top level without paths, components and webhooks
// (loaded by kin-openapi's loader, which sets up its state for resolving
// references), and the path items and component schemas one by one, each
// decoded by kin-openapi's own UnmarshalJSON exactly as its containers'
// methods would call it; the parts are then put together and the loader
// resolves the references. A YAML spec is converted to JSON by walking
// yaml.v3's node tree, with the same values kin-openapi's own YAML to JSON
// conversion gives (github.com/oasdiff/yaml: keys sorted, numbers as their
// values); a JSON spec is cut with jsontext. Whatever the split does not
// handle exactly (anchors, merge keys, custom tags, duplicate keys, keys
// that match a field only by case, syntax errors) returns ok false and the
// document is loaded whole, as before, so kin-openapi's results and errors
// stay its own.
type splitDoc struct {
	top        []byte   // JSON object: the document without paths, components and webhooks
	paths      []byte   // JSON object: the x- members of paths; nil without paths
	pathItems  []member // the other members of paths
	components []byte   // JSON object: components without schemas; nil without components
	schemas    []member // components.schemas
	hasSchemas bool
	webhooks   []byte // JSON value of webhooks; nil without
}

type member struct {
	name string
	raw  []byte
}

// errNoSplit is a document splitDoc leaves to kin-openapi whole.
var errNoSplit = errors.New("not split")

// split cuts data, YAML or JSON, into a splitDoc.
func split(data []byte) (*splitDoc, bool) {
	var d *splitDoc
	var err error
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		d, err = splitJSON(data)
	} else {
		d, err = splitYAML(data)
	}
	return d, err == nil
}

// decodeParts decodes the parts of d into doc, whose top level the loader
// has decoded, on every core.
func (d *splitDoc) decodeParts(doc *openapi3.T) error {
	var paths *openapi3.Paths
	if d.paths != nil {
		if err := json.Unmarshal(d.paths, &paths); err != nil {
			return err
		}
	}
	var comps *openapi3.Components
	if d.components != nil {
		if err := json.Unmarshal(d.components, &comps); err != nil {
			return err
		}
	}
	if d.webhooks != nil {
		var w map[string]*openapi3.PathItem
		if err := json.Unmarshal(d.webhooks, &w); err != nil {
			return err
		}
		doc.Webhooks = w
	}
	items := make([]*openapi3.PathItem, len(d.pathItems))
	schemas := make([]*openapi3.SchemaRef, len(d.schemas))
	// The largest first, so that the cores finish together.
	type task struct {
		size int
		run  func() error
	}
	tasks := make([]task, 0, len(items)+len(schemas))
	for i, m := range d.pathItems {
		tasks = append(tasks, task{len(m.raw), func() error {
			items[i] = new(openapi3.PathItem)
			return items[i].UnmarshalJSON(m.raw)
		}})
	}
	for i, m := range d.schemas {
		tasks = append(tasks, task{len(m.raw), func() error {
			if string(m.raw) == "null" {
				return nil // as encoding/json leaves a map's null pointer
			}
			schemas[i] = new(openapi3.SchemaRef)
			return schemas[i].UnmarshalJSON(m.raw)
		}})
	}
	slices.SortStableFunc(tasks, func(a, b task) int { return b.size - a.size })
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Go(func() {
			for failed.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(tasks) {
					return
				}
				if err := tasks[i].run(); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		return *p
	}
	if paths != nil {
		for i, m := range d.pathItems {
			paths.Set(m.name, items[i])
		}
		doc.Paths = paths
	}
	if comps != nil {
		if d.hasSchemas {
			comps.Schemas = make(openapi3.Schemas, len(d.schemas))
			for i, m := range d.schemas {
				comps.Schemas[m.name] = schemas[i]
			}
		}
		doc.Components = comps
	}
	return nil
}

// caseFoldClash reports whether name would fill one of fields' struct
// fields only by encoding/json's case-insensitive match: the split leaves
// such documents whole.
func caseFoldClash(name string, fields ...string) bool {
	for _, f := range fields {
		if name != f && strings.EqualFold(name, f) {
			return true
		}
	}
	return false
}

// splitJSON cuts a JSON document. jsontext refuses duplicate names and
// invalid UTF-8, which encoding/json accepts: such a document is left whole.
func splitJSON(data []byte) (*splitDoc, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	d := &splitDoc{}
	top := newObject()
	err := readObject(dec, func(name string) error {
		switch {
		case caseFoldClash(name, "paths", "components", "webhooks"):
			return errNoSplit
		case name == "paths":
			rest := newObject()
			if err := readObject(dec, func(name string) error {
				v, err := dec.ReadValue()
				if err != nil {
					return err
				}
				if strings.HasPrefix(name, "x-") {
					rest.add(name, v)
				} else {
					d.pathItems = append(d.pathItems, member{name, bytes.Clone(v)})
				}
				return nil
			}); err != nil {
				return err
			}
			d.paths = rest.close()
		case name == "components":
			rest := newObject()
			if err := readObject(dec, func(name string) error {
				if caseFoldClash(name, "schemas") {
					return errNoSplit
				}
				if name == "schemas" {
					d.hasSchemas = true
					return readObject(dec, func(name string) error {
						v, err := dec.ReadValue()
						if err != nil {
							return err
						}
						d.schemas = append(d.schemas, member{name, bytes.Clone(v)})
						return nil
					})
				}
				v, err := dec.ReadValue()
				if err != nil {
					return err
				}
				rest.add(name, v)
				return nil
			}); err != nil {
				return err
			}
			d.components = rest.close()
		default:
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if name == "webhooks" {
				d.webhooks = bytes.Clone(v)
			} else {
				top.add(name, v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errNoSplit // anything after the value: encoding/json refuses it
	}
	d.top = top.close()
	return d, nil
}

// readObject reads a JSON object, calling member after each name with the
// decoder before the value, which member must read.
func readObject(dec *jsontext.Decoder, member func(name string) error) error {
	if dec.PeekKind() != '{' {
		return errNoSplit
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := member(tok.String()); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// object writes a JSON object member by member.
type object struct{ b []byte }

func newObject() *object { return &object{b: []byte{'{'}} }

func (o *object) add(name string, raw []byte) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b, _ = jsontext.AppendQuote(o.b, name)
	o.b = append(o.b, ':')
	o.b = append(o.b, raw...)
}

func (o *object) close() []byte { return append(o.b, '}') }

// splitYAML cuts a YAML document, converting it to JSON.
func splitYAML(data []byte) (*splitDoc, error) {
	doc, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	keys, err := mappingKeys(doc)
	if err != nil {
		return nil, err
	}
	d := &splitDoc{}
	var c converter
	top := newObject()
	for _, k := range keys {
		v := doc.Content[k.i+1]
		switch {
		case caseFoldClash(k.name, "paths", "components", "webhooks"):
			return nil, errNoSplit
		case k.name == "paths":
			pk, err := mappingKeys(v)
			if err != nil {
				return nil, err
			}
			rest := newObject()
			for _, p := range pk {
				raw, err := c.json(v.Content[p.i+1])
				if err != nil {
					return nil, err
				}
				if strings.HasPrefix(p.name, "x-") {
					rest.add(p.name, raw)
				} else {
					d.pathItems = append(d.pathItems, member{p.name, raw})
				}
			}
			d.paths = rest.close()
		case k.name == "components":
			ck, err := mappingKeys(v)
			if err != nil {
				return nil, err
			}
			rest := newObject()
			for _, p := range ck {
				cv := v.Content[p.i+1]
				if caseFoldClash(p.name, "schemas") {
					return nil, errNoSplit
				}
				if p.name != "schemas" {
					raw, err := c.json(cv)
					if err != nil {
						return nil, err
					}
					rest.add(p.name, raw)
					continue
				}
				sk, err := mappingKeys(cv)
				if err != nil {
					return nil, err
				}
				d.hasSchemas = true
				for _, s := range sk {
					raw, err := c.json(cv.Content[s.i+1])
					if err != nil {
						return nil, err
					}
					d.schemas = append(d.schemas, member{s.name, raw})
				}
			}
			d.components = rest.close()
		default:
			raw, err := c.json(v)
			if err != nil {
				return nil, err
			}
			if k.name == "webhooks" {
				d.webhooks = raw
			} else {
				top.add(k.name, raw)
			}
		}
	}
	d.top = top.close()
	return d, nil
}

// parseYAML parses a YAML document into the node of its top level, on
// every core when it can be cut into sections at its top-level keys: lines
// at column 0 that are blank, comments, entries of a sequence ("- ", the
// value of the key before) or a simple key followed by ": " or the end of
// the line, and nothing else (no document markers, directives or flow
// collections at the top). Everything else of a top-level
// entry is indented (block scalars, plain and quoted scalars continued on
// more lines, nested collections), so a cut inside an entry leaves a section
// that does not parse (an unterminated quote or flow collection, an alias to
// an anchor in another section), and the document is then parsed whole.
func parseYAML(data []byte) (*yaml.Node, error) {
	if secs := yamlSections(data, runtime.GOMAXPROCS(0)); len(secs) > 1 {
		nodes := make([]yaml.Node, len(secs))
		errs := make([]error, len(secs))
		var wg sync.WaitGroup
		for i, sec := range secs {
			wg.Go(func() { errs[i] = yaml.Unmarshal(sec, &nodes[i]) })
		}
		wg.Wait()
		if top, ok := mergeSections(nodes, errs); ok {
			return top, nil
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return nil, errNoSplit
	}
	return root.Content[0], nil
}

// mergeSections puts the top-level mappings of the sections together.
func mergeSections(nodes []yaml.Node, errs []error) (*yaml.Node, bool) {
	var top *yaml.Node
	for i, n := range nodes {
		if errs[i] != nil || n.Kind != yaml.DocumentNode || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
			return nil, false
		}
		if top == nil {
			top = n.Content[0]
		} else {
			top.Content = append(top.Content, n.Content[0].Content...)
		}
	}
	return top, true
}

// yamlSections cuts data before top-level keys into about parts sections
// of similar size; nil when it cannot (see parseYAML).
func yamlSections(data []byte, parts int) [][]byte {
	var keys []int // offsets of the top-level key lines
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += pos + 1
		}
		line := data[pos:end]
		switch {
		case len(bytes.TrimSpace(line)) == 0, line[0] == ' ', line[0] == '#',
			line[0] == '-' && (len(line) == 1 || line[1] == ' ' || line[1] == '\n'): // an entry of a sequence at column 0, the value of a key
		case simpleKey(line):
			keys = append(keys, pos)
		default:
			return nil
		}
		pos = end
	}
	if len(keys) < 2 || parts < 2 {
		return nil
	}
	// Cut at the key nearest to each of the parts-1 even boundaries.
	var secs [][]byte
	start := 0
	for i := 1; i < parts; i++ {
		b := i * len(data) / parts
		j, _ := slices.BinarySearch(keys, b)
		if j == len(keys) || j > 0 && b-keys[j-1] < keys[j]-b {
			j--
		}
		if keys[j] > start {
			secs = append(secs, data[start:keys[j]])
			start = keys[j]
		}
	}
	return append(secs, data[start:])
}

// simpleKey reports whether a line starts with a plain key made of
// letters, digits and _ $ . / - followed by a colon and a space or the end
// of the line.
func simpleKey(line []byte) bool {
	for i, c := range line {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '$':
		case i > 0 && (c == '.' || c == '/' || c == '-'):
		case i > 0 && c == ':':
			rest := line[i+1:]
			return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\n' || rest[0] == '\r'
		default:
			return false
		}
	}
	return false
}

type mappingKey struct {
	name string
	i    int // index of the key node in the mapping's Content
}

// mappingKeys lists the keys of a mapping as JSON member names, sorted as
// encoding/json sorts a map's keys, which kin-openapi's YAML path marshals.
func mappingKeys(n *yaml.Node) ([]mappingKey, error) {
	if n.Kind != yaml.MappingNode || n.Tag != "!!map" {
		return nil, errNoSplit
	}
	keys := make([]mappingKey, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, err := keyName(n.Content[i])
		if err != nil {
			return nil, err
		}
		keys = append(keys, mappingKey{name, i})
	}
	slices.SortFunc(keys, func(a, b mappingKey) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(keys); i++ {
		if keys[i].name == keys[i-1].name {
			return nil, errNoSplit // a duplicate key: an error of the YAML decoder
		}
	}
	return keys, nil
}

// keyName is the JSON member name of a mapping key: github.com/oasdiff/yaml
// writes numbers and booleans as strconv does.
func keyName(k *yaml.Node) (string, error) {
	if k.Kind != yaml.ScalarNode {
		return "", errNoSplit
	}
	switch k.Tag {
	case "!!str":
		return k.Value, nil
	case "!!int", "!!bool", "!!float":
		var v any
		if err := k.Decode(&v); err != nil {
			return "", err
		}
		switch v := v.(type) {
		case int:
			return strconv.Itoa(v), nil
		case bool:
			return strconv.FormatBool(v), nil
		case float64:
			return strconv.FormatFloat(v, 'g', -1, 64), nil
		}
	}
	return "", errNoSplit
}

type converter struct{ b []byte }

// json returns n as JSON.
func (c *converter) json(n *yaml.Node) ([]byte, error) {
	c.b = c.b[:0]
	if err := c.value(n); err != nil {
		return nil, err
	}
	return bytes.Clone(c.b), nil
}

func (c *converter) value(n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		keys, err := mappingKeys(n)
		if err != nil {
			return err
		}
		c.b = append(c.b, '{')
		for j, k := range keys {
			if j > 0 {
				c.b = append(c.b, ',')
			}
			c.b, _ = jsontext.AppendQuote(c.b, k.name)
			c.b = append(c.b, ':')
			if err := c.value(n.Content[k.i+1]); err != nil {
				return err
			}
		}
		c.b = append(c.b, '}')
		return nil
	case yaml.SequenceNode:
		if n.Tag != "!!seq" {
			return errNoSplit
		}
		c.b = append(c.b, '[')
		for j, e := range n.Content {
			if j > 0 {
				c.b = append(c.b, ',')
			}
			if err := c.value(e); err != nil {
				return err
			}
		}
		c.b = append(c.b, ']')
		return nil
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return errNoSplit // aliases are expanded by the YAML decoder, with its limits
}

func (c *converter) scalar(n *yaml.Node) error {
	switch n.Tag {
	case "!!str", "!!timestamp": // kin-openapi keeps timestamps as written
		var err error
		c.b, err = jsontext.AppendQuote(c.b, n.Value)
		return err
	case "!!null":
		c.b = append(c.b, "null"...)
		return nil
	case "!!bool":
		switch n.Value {
		case "true", "false":
			c.b = append(c.b, n.Value...)
			return nil
		}
	case "!!int":
		if plainInt(n.Value) {
			c.b = append(c.b, n.Value...)
			return nil
		}
	case "!!float":
	default:
		return errNoSplit
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return errNoSplit
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.b = append(c.b, raw...)
	return nil
}

// plainInt reports whether s is a decimal integer that YAML and JSON read
// alike and that fits an int64.
func plainInt(s string) bool {
	t := strings.TrimPrefix(s, "-")
	if t == "" || len(t) > 18 || len(t) > 1 && t[0] == '0' || t == "0" && t != s {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}
