// Why a spec does not load, said where: kin-openapi's load errors name
// neither the value nor its line ("failed to unmarshal data: json error:
// ..., yaml error: ... cannot unmarshal array into value of type
// openapi3.Schema", `map key "NewBookin" not found`), and lead with a JSON
// error for a YAML file. After a load failed, diagnose reads the document
// (and the files its $refs name) as YAML nodes and reports each problem
// with the file, the line and the JSON pointer of the value, in the words
// of the file's own format:
//
//	openapi.yaml: line 16: #/components/schemas/Pair/items: a sequence where a schema (a mapping) is expected; a tuple is prefixItems: [...] in OpenAPI 3.1
//	openapi.yaml: line 20: #/paths/~1bookings/post/...: $ref "#/components/schemas/NewBookin" does not resolve: #/components/schemas has no NewBookin (did you mean NewBooking?)
//
// A spec that loads pays nothing for it.

package generator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"

	"github.com/idemgen/idemgen/generator/internal/load"
	"github.com/idemgen/idemgen/generator/internal/suggest"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

// diagnoser reads the files of one document, each once.
type diagnoser struct {
	dir      string           // the directory of the document, for file $refs
	files    map[string]*file // by path relative to dir, slash-separated
	problems []string
	blamed   map[string]bool // file#pointer already blamed
}

// file is one file of the document as YAML nodes.
type file struct {
	name string     // as messages name it
	root *yaml.Node // nil when it does not parse
	err  error      // why it cannot be read or parsed
	json bool       // written in JSON: messages speak of objects and arrays
	doc  bool       // the document itself, not a file its $refs name
}

// diagnose explains err, the failure to load data (the document named name
// in messages, read from path): its problems, sorted, each located; nil
// when it finds nothing to blame.
func diagnose(data []byte, name, path string) []string {
	d := &diagnoser{dir: filepath.Dir(path), files: map[string]*file{}, blamed: map[string]bool{}}
	root := d.parse(name, data)
	root.doc = true
	d.files[""] = root
	if root.err != nil {
		return []string{root.err.Error()}
	}
	d.refs(root)
	if len(d.problems) == 0 {
		d.blame(root, root.root, "", reflect.TypeFor[openapi3.T]())
	}
	if len(d.problems) == 0 {
		d.external(root, root.root, "", reflect.TypeFor[openapi3.T](), 0)
	}
	sort.Strings(d.problems)
	return d.problems
}

// specLoadError is a load failure diagnose found nothing to blame for:
// kin-openapi's error, with the half that speaks of the other format left
// out ("json error: ..., yaml error: ..." of a YAML file).
func specLoadError(name string, data []byte, err error) error {
	msg := err.Error()
	if m := bothErrors.FindStringSubmatch(msg); m != nil {
		if isJSON(data) {
			msg = m[1] + m[2]
		} else {
			msg = m[1] + m[3]
		}
	}
	return fmt.Errorf("%s: %s", name, msg)
}

var bothErrors = regexp.MustCompile(`^(.*?)failed to unmarshal data: json error: (.*), yaml error: (.*)$`)

// isJSON reports a document written in JSON.
func isJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{' || c == '['
	}
	return false
}

// parse reads data as the file name: a syntax error is its problem, with
// the line (and for JSON the column) where the parser stopped.
func (d *diagnoser) parse(name string, data []byte) *file {
	f := &file{name: name, json: isJSON(data)}
	if f.json {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line, col := lineCol(data, se.Offset-1) // Offset is just past the culprit
				f.err = fmt.Errorf("%s: line %d, column %d: %v", name, line, col, se)
			} else {
				f.err = fmt.Errorf("%s: %v", name, err)
			}
			return f
		}
	}
	root, err := load.Nodes(data)
	if err != nil {
		f.err = fmt.Errorf("%s: %s", name, yamlSyntax(err))
		return f
	}
	f.root = root
	return f
}

// yamlSyntax is yaml.v3's syntax error without its "yaml: " prefix and with
// the right line: for the parser's errors ("did not find expected ...")
// it reports the line where the construct began counted from 0.
func yamlSyntax(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil && strings.HasPrefix(m[2], "did not find expected") {
		n, _ := strconv.Atoi(m[1])
		msg = fmt.Sprintf("line %d: %s", n+1, m[2])
	}
	return msg
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// lineCol is the line and column (1-based) of byte offset off of data.
func lineCol(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// open returns the file a $ref names, relative to the directory of the
// document; "" names the document.
func (d *diagnoser) open(rel string) *file {
	if f, ok := d.files[rel]; ok {
		return f
	}
	data, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(rel)))
	f := &file{name: rel}
	if err == nil {
		f = d.parse(rel, data)
	} else {
		f.err = err
	}
	d.files[rel] = f
	return f
}

func (d *diagnoser) addf(f *file, n *yaml.Node, ptr, format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf("%s: line %d: #%s: %s", f.name, n.Line, ptr, fmt.Sprintf(format, args...)))
}

// refs reports the $refs of f that point nowhere, each with the nearest
// name that does exist, and those of the files they name (each file once).
func (d *diagnoser) refs(f *file) {
	load.Walk(f.root, "", func(ptr string, n *yaml.Node) bool {
		v := load.Member(n, "$ref")
		if v == nil || v.Kind != yaml.ScalarNode {
			return true
		}
		target, frag, _ := strings.Cut(v.Value, "#")
		if strings.Contains(target, "://") {
			return false // remote: the loader's business
		}
		tf := f
		if target != "" {
			tf = d.open(pathJoin(f.name, target, f.doc))
			if tf.err != nil {
				d.addf(f, v, ptr, "$ref %q does not resolve: %v", v.Value, tf.err)
				return false
			}
			if _, seen := d.blamed[tf.name+"#refs"]; !seen {
				d.blamed[tf.name+"#refs"] = true
				d.refs(tf)
			}
		}
		if msg := resolveIn(tf, frag); msg != "" {
			d.addf(f, v, ptr, "$ref %q does not resolve: %s", v.Value, msg)
		}
		return false
	})
}

// pathJoin is the path of target, a file $ref written in the file from,
// relative to the document's directory.
func pathJoin(from, target string, fromRoot bool) string {
	if fromRoot {
		return filepath.ToSlash(filepath.Clean(target))
	}
	return filepath.ToSlash(filepath.Join(filepath.Dir(from), target))
}

// resolveIn follows the fragment of a $ref (a JSON pointer after the #,
// "" for the whole file) in f and says what is missing, "" when it
// resolves.
func resolveIn(f *file, frag string) string {
	if frag == "" {
		return ""
	}
	if !strings.HasPrefix(frag, "/") {
		return "the part after # is a JSON pointer, starting with /"
	}
	tokens, err := jsonkit.ParsePointer(frag)
	if err != nil {
		return err.Error()
	}
	n, depth, _ := load.Follow(f.root, tokens)
	if depth == len(tokens) {
		return ""
	}
	// n is the deepest node on the way: name what it lacks.
	at := "#" + jsonkit.Pointer(tokens[:depth]...)
	switch {
	case !f.doc && depth == 0:
		at = f.name // other.yaml has no Thing
	case !f.doc:
		at = f.name + at
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	tok := tokens[depth]
	switch n.Kind {
	case yaml.MappingNode:
		var keys []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
		}
		return fmt.Sprintf("%s has no %s%s", at, tok, suggest.DidYouMean(tok, keys))
	case yaml.SequenceNode:
		return fmt.Sprintf("%s has no item %s", at, tok)
	}
	return fmt.Sprintf("%s is not an object", at)
}

// blame finds, in the value n of file f at ptr, what kin-openapi cannot
// decode as typ, the Go type it reads there: the deepest values that do
// not decode while their parent does not either. A $ref to another file
// is blamed there, as typ.
func (d *diagnoser) blame(f *file, n *yaml.Node, ptr string, typ reflect.Type) {
	key := f.name + "#" + ptr
	if n == nil || d.blamed[key] {
		return
	}
	d.blamed[key] = true
	typ, ok := d.through(f, n, typ)
	if !ok || decodes(n, typ) {
		return
	}
	before := len(d.problems)
	for _, c := range children(n, typ) {
		d.blame(f, c.node, ptr+"/"+jsonkit.EscapeToken(c.token), c.typ)
	}
	if len(d.problems) == before {
		d.addf(f, n, ptr, "%s", mismatch(f, n, typ, ptr))
	}
}

// through is the type of the value n holds, where kin-openapi reads typ:
// the Value of a reference type. A $ref (to another file) is blamed there
// instead: ok is false.
func (d *diagnoser) through(f *file, n *yaml.Node, typ reflect.Type) (reflect.Type, bool) {
	typ = deref(typ)
	value, isRef := refValue(typ)
	if !isRef {
		return typ, true
	}
	if ref := load.Member(n, "$ref"); ref != nil {
		d.blameTarget(f, ref, typ)
		return nil, false
	}
	return deref(value), true
}

func deref(typ reflect.Type) reflect.Type {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	return typ
}

// blameTarget blames the value that ref, a $ref written in f, names in
// another file, as typ (a reference type: the value may be a $ref again).
func (d *diagnoser) blameTarget(f *file, ref *yaml.Node, typ reflect.Type) {
	target, frag, _ := strings.Cut(ref.Value, "#")
	if ref.Kind != yaml.ScalarNode || target == "" || strings.Contains(target, "://") {
		return
	}
	if tf := d.open(pathJoin(f.name, target, f.doc)); tf.root != nil {
		if tn, ok := load.At(tf.root, frag); ok {
			d.blame(tf, tn, frag, typ)
		}
	}
}

// external blames the values that the $refs below n (of type typ) name
// in other files: the document itself decodes without them.
func (d *diagnoser) external(f *file, n *yaml.Node, ptr string, typ reflect.Type, depth int) {
	if n == nil || depth > 64 {
		return
	}
	typ, ok := d.through(f, n, typ)
	if !ok {
		return
	}
	for _, c := range children(n, typ) {
		d.external(f, c.node, ptr+"/"+jsonkit.EscapeToken(c.token), c.typ, depth+1)
	}
}

// child is a member or item of a node and the Go type it decodes to.
type child struct {
	token string
	node  *yaml.Node
	typ   reflect.Type
}

// children pairs the members (or items) of n with the types kin-openapi
// decodes them to, as typ (a struct, map, slice, or one of kin-openapi's
// map-like types) says.
func children(n *yaml.Node, typ reflect.Type) []child {
	var out []child
	switch {
	case n.Kind == yaml.SequenceNode && typ.Kind() == reflect.Slice:
		for i, c := range n.Content {
			out = append(out, child{strconv.Itoa(i), c, typ.Elem()})
		}
		return out
	case n.Kind != yaml.MappingNode:
		return nil
	}
	var elem reflect.Type
	fields := map[string]reflect.Type{}
	switch {
	case typ.Kind() == reflect.Map:
		elem = typ.Elem()
	case typ == reflect.TypeFor[openapi3.BoolSchema]():
		return nil // blamed as a whole, or as a schema where it is one (below)
	case typ.Kind() == reflect.Struct:
		if m, ok := reflect.PointerTo(typ).MethodByName("Map"); ok && m.Type.NumOut() == 1 && m.Type.Out(0).Kind() == reflect.Map {
			elem = m.Type.Out(0).Elem() // Paths, Responses, Callback
		}
		for f := range typ.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" && f.IsExported() {
				fields[name] = f.Type
			}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if t, ok := fields[k]; ok {
			if t == reflect.TypeFor[openapi3.BoolSchema]() && v.Kind == yaml.MappingNode {
				t = reflect.TypeFor[openapi3.SchemaRef]() // additionalProperties, unevaluated*: a schema
			}
			out = append(out, child{k, v, t})
		} else if elem != nil && !strings.HasPrefix(k, "x-") {
			out = append(out, child{k, v, elem})
		}
	}
	return out
}

// refValue returns the type of Value when typ is one of kin-openapi's
// reference types (SchemaRef, ParameterRef, ...: a Ref and a Value).
func refValue(typ reflect.Type) (reflect.Type, bool) {
	if typ.Kind() != reflect.Struct {
		return nil, false
	}
	r, okRef := typ.FieldByName("Ref")
	v, okValue := typ.FieldByName("Value")
	if !okRef || !okValue || r.Type.Kind() != reflect.String || v.Type.Kind() != reflect.Pointer {
		return nil, false
	}
	return v.Type, true
}

// decodes reports whether kin-openapi decodes n as a value of typ.
func decodes(n *yaml.Node, typ reflect.Type) bool {
	data, err := json.Marshal(nodeValue(n, 0))
	if err != nil {
		return false
	}
	return json.Unmarshal(data, reflect.New(typ).Interface()) == nil
}

// nodeValue is n as encoding/json would marshal it, every mapping key a
// string (YAML reads `200:` as a number).
func nodeValue(n *yaml.Node, depth int) any {
	if depth > 256 {
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil {
			return nodeValue(n.Alias, depth+1)
		}
		return nil
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = nodeValue(n.Content[i+1], depth+1)
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			l[i] = nodeValue(c, depth+1)
		}
		return l
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return nodeValue(n.Content[0], depth+1)
		}
		return nil
	}
	var v any
	if n.Decode(&v) != nil {
		return n.Value
	}
	return v
}

// mismatch says what n is and what kin-openapi reads there, in the words
// of f's format.
func mismatch(f *file, n *yaml.Node, typ reflect.Type, ptr string) string {
	object, array := "a mapping", "a sequence"
	if f.json {
		object, array = "an object", "an array"
	}
	var got string
	switch n.Kind {
	case yaml.MappingNode:
		got = object
	case yaml.SequenceNode:
		got = array
	default:
		switch n.Tag {
		case "!!null":
			got = "null"
		case "!!bool":
			got = "the boolean " + n.Value
		case "!!int", "!!float":
			got = "the number " + n.Value
		default:
			got = strconv.Quote(n.Value)
		}
	}
	var want string
	switch typ.Kind() {
	case reflect.Struct, reflect.Map:
		want = object
		if typ.PkgPath() == reflect.TypeFor[openapi3.T]().PkgPath() {
			want = kinName(typ.Name()) + " (" + object + ")"
		}
		if typ == reflect.TypeFor[openapi3.BoolSchema]() {
			want = "a boolean or a schema (" + object + ")"
		}
		if typ == reflect.TypeFor[openapi3.ExclusiveBound]() {
			want = "a boolean (OpenAPI 3.0) or a number (3.1)"
		}
	case reflect.Slice:
		want = array
		if typ == reflect.TypeFor[openapi3.Types]() {
			want = "a type name or " + array + " of them"
		}
	case reflect.Bool:
		want = "a boolean"
	case reflect.String:
		want = "a string"
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64, reflect.Int32, reflect.Uint32:
		want = "a number"
	default:
		want = "another value"
	}
	msg := got + " where " + want + " is expected"
	if n.Kind == yaml.SequenceNode && strings.HasSuffix(ptr, "/items") {
		msg += "; a tuple is prefixItems: [...] in OpenAPI 3.1 (JSON Schema 2020-12)"
	}
	return msg
}

// kinName is what a kin-openapi type is called in words, with its
// article: "a schema", "a parameter", "an OAuth flow".
func kinName(name string) string {
	switch name {
	case "T":
		return "an OpenAPI document"
	case "Schema", "SchemaRef":
		return "a schema"
	}
	// Words start at an upper-case letter after a lower-case one, or
	// before one (OAuthFlow: OAuth, Flow); a word all in upper case stays.
	rs := []rune(strings.TrimSuffix(name, "Ref"))
	var words []string
	start := 0
	for i := 1; i <= len(rs); i++ {
		if i == len(rs) || unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) && i-start > 1) {
			w := string(rs[start:i])
			if strings.ToUpper(w) != w {
				w = strings.ToLower(w)
			}
			words, start = append(words, w), i
		}
	}
	phrase := strings.Join(words, " ")
	if strings.ContainsRune("aeiouAEIOU", rs[0]) {
		return "an " + phrase
	}
	return "a " + phrase
}
