package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Model is everything the renderers need, decided once: names, order, types
// and policies. Templates receive *Model (see templates/README.md).
type Model struct {
	Package    string       // Go package name
	Source     string       // spec path relative to the output dir, slash-separated
	BasePath   string       // prefix of every route pattern, from the config
	Types      []*Type      // every named type, sorted by name
	Operations []*Operation // sorted by path, then method
	// Webhooks are the OpenAPI 3.1 webhooks, sorted by name.
	Webhooks []*Webhook
	// WebhookSource is the CloudEvents source of the events the webhook
	// senders enqueue, from the config (webhookSource).
	WebhookSource string
	Warnings      []Warning
}

// IdempotentOperations returns the operations that go through the engine.
func (m *Model) IdempotentOperations() []*Operation {
	var out []*Operation
	for _, op := range m.Operations {
		if op.Idempotent {
			out = append(out, op)
		}
	}
	return out
}

// TypeKind is the shape of a generated named type.
type TypeKind int

const (
	KindStruct TypeKind = iota // struct with fields
	KindAlias                  // type X = <Go type> (primitive, slice, map)
	KindEnum                   // string type with constants
	KindUnion                  // oneOf/anyOf: raw JSON with As<Variant> getters
)

// Type is one named Go type.
type Type struct {
	Name     string
	Doc      string
	Location string // JSON pointer in the spec, e.g. #/components/schemas/Pet
	Kind     TypeKind
	Fields   []*Field    // KindStruct
	Alias    GoType      // KindAlias
	Enum     []EnumValue // KindEnum
	Variants []Variant   // KindUnion
}

// Required returns the JSON names of the required fields.
func (t *Type) Required() []string {
	var out []string
	for _, f := range t.Fields {
		if f.Required {
			out = append(out, f.JSONName)
		}
	}
	return out
}

// Field is one struct field.
type Field struct {
	Name     string
	JSONName string
	Doc      string
	Type     GoType
	Required bool
}

// EnumValue is one constant of an enum type.
type EnumValue struct{ Name, Value string }

// Variant is one member of a union.
type Variant struct {
	Name string // suffix of the As<Name> getter and <Union>From<Name> constructor
	Type GoType
}

// GoKind enumerates Go type shapes.
type GoKind int

const (
	GoAny     GoKind = iota
	GoBuiltin        // string, bool, int32, int64, float32, float64
	GoNamed          // a type of this package
	GoTime           // time.Time
	GoUUID           // uuid.UUID
	GoBytes          // []byte
	GoSlice
	GoMap
	GoPointer
)

// GoType is a Go type expression.
type GoType struct {
	Kind GoKind
	Name string  // GoBuiltin, GoNamed
	Elem *GoType // GoSlice, GoMap, GoPointer
}

func (t GoType) nilable() bool {
	switch t.Kind {
	case GoAny, GoBytes, GoSlice, GoMap, GoPointer:
		return true
	}
	return false
}

func ptr(t GoType) GoType { return GoType{Kind: GoPointer, Elem: &t} }

// String renders the type as Go source (for templates and comments).
func (t GoType) String() string {
	switch t.Kind {
	case GoAny:
		return "any"
	case GoBuiltin, GoNamed:
		return t.Name
	case GoTime:
		return "time.Time"
	case GoUUID:
		return "uuid.UUID"
	case GoBytes:
		return "[]byte"
	case GoSlice:
		return "[]" + t.Elem.String()
	case GoMap:
		return "map[string]" + t.Elem.String()
	case GoPointer:
		return "*" + t.Elem.String()
	}
	return "any"
}

// Operation is one HTTP operation.
type Operation struct {
	ID         string   // operationId (derived from method and path when absent)
	GoName     string   // exported name: CreatePayment
	Method     string   // POST
	Path       string   // /payments/{id}
	Pattern    string   // ServeMux pattern without method: /payments/{id}
	PathParams []string // ServeMux wildcard names, in path order (r.PathValue keys)
	Summary    string
	Deprecated bool
	Idempotent bool
	Policy     Policy // resolved; SchemaVersion is never "auto" here
	Params     []*Param
	Body       *Body // nil: no request body
	Responses  []*Response
	Location   string // JSON pointer, e.g. #/paths/~1payments/post
}

// RequestType, ResponseType and friends name the operation's Go identifiers.
func (o *Operation) RequestType() string  { return o.GoName + "Request" }
func (o *Operation) ResponseType() string { return o.GoName + "Response" }
func (o *Operation) Handler() string      { return "handle" + o.GoName }
func (o *Operation) Decoder() string      { return "decode" + o.GoName + "Request" }
func (o *Operation) OpVar() string        { return "op" + o.GoName }
func (o *Operation) Marker() string       { return "is" + o.GoName + "Response" }

// Route is the ServeMux pattern with method, e.g. "POST /payments/{id}".
func (o *Operation) Route(basePath string) string { return o.Method + " " + basePath + o.Pattern }

// Param is one path, query, header or cookie parameter.
type Param struct {
	Name     string // as in the spec
	In       string // path, query, header, cookie
	Field    string // Go field of the request type
	Type     GoType // element type for lists
	Required bool
	List     bool // query array
	Explode  bool
	Key      string // lookup key: the spec name, or the ServeMux wildcard of a path parameter
	Parse    string // parse function of package idemimpl, with its type argument: ParseInt32, ParseEnum[Status]
}

// Where names the parameter in error messages: `query parameter "limit"`.
func (p *Param) Where() string { return p.In + " parameter " + strconv.Quote(p.Name) }

// Body is the request body.
type Body struct {
	MediaType string
	JSON      bool   // decoded as JSON into Type; otherwise raw bytes
	Type      GoType // the field type (pointer when optional JSON)
	Required  bool
}

// Response is one declared status of an operation.
type Response struct {
	Status      string // "201", "2XX", "default"
	Code        int    // 0 for ranges and default: the type then has a Status field
	TypeName    string
	Description string
	MediaType   string // "" when there is no body
	JSON        bool
	Body        GoType
	Headers     []Header
}

// Header is a response header field.
type Header struct{ Name, Field string }

type builder struct {
	doc      *openapi3.T
	file     string
	errs     *errList
	ns       *namespace
	types    map[string]*Type // by Go name
	bySchema map[*openapi3.Schema]string
	building map[string]bool
	rename   map[string]string
	byRef    map[string]string
	warns    []Warning
}

var reservedNames = []string{"Server", "Unimplemented", "NewHandler", "Option", "WithMiddleware",
	"WithErrorHook", "WithMaxBodyBytes", "DefaultMaxBodyBytes", "IdempotentOperations"}

func buildModel(doc *openapi3.T, cfg *Config, source string) (*Model, error) {
	file := specName(cfg)
	errs := &errList{}
	b := &builder{doc: doc, file: file, errs: errs, ns: newNamespace(file, errs, reservedNames...),
		types: map[string]*Type{}, bySchema: map[*openapi3.Schema]string{}, building: map[string]bool{}, rename: cfg.Rename, byRef: map[string]string{}}

	// Component schemas first so that refs find their names.
	if doc.Components != nil {
		names := sortedKeys(doc.Components.Schemas)
		for _, name := range names {
			sr := doc.Components.Schemas[name]
			if sr == nil || sr.Value == nil {
				continue
			}
			if _, ok := b.bySchema[sr.Value]; ok {
				continue // a component that is only a $ref to another
			}
			goname := b.name(goName(name), "#/components/schemas/"+name)
			if b.ns.claim(goname, "#/components/schemas/"+name) {
				b.bySchema[sr.Value] = goname
			}
		}
		for _, name := range names {
			sr := doc.Components.Schemas[name]
			if sr == nil || sr.Value == nil {
				continue
			}
			if goname, ok := b.bySchema[sr.Value]; ok && b.types[goname] == nil {
				b.declare(goname, sr.Value, "#/components/schemas/"+name)
			}
		}
	}

	var root *policyPatch
	if v, ok := doc.Extensions["x-idempotent"]; ok {
		var optOut bool
		root, optOut = parseExtension(v, file+": ", errs)
		if optOut {
			errs.addf("%s: x-idempotent: false is only meaningful on an operation", file)
		}
	}

	m := &Model{Package: cfg.Package, Source: source}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		for _, method := range sortedKeys(ops) {
			if op := b.operation(path, method, item, ops[method], root, cfg); op != nil {
				m.Operations = append(m.Operations, op)
			}
		}
	}
	sort.Slice(m.Operations, func(i, j int) bool {
		a, c := m.Operations[i], m.Operations[j]
		if a.Path != c.Path {
			return a.Path < c.Path
		}
		return a.Method < c.Method
	})
	b.checkRoutes(m.Operations)
	m.Webhooks = b.webhooks(doc)
	m.WebhookSource = cfg.WebhookSource
	if err := errs.err(); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(b.types) {
		m.Types = append(m.Types, b.types[name])
	}
	m.Warnings = b.warns
	return m, nil
}

// name applies the config's Rename to the type generated at loc.
func (b *builder) name(def, loc string) string {
	if n, ok := b.rename[loc]; ok {
		return n
	}
	return def
}

func (b *builder) warnf(where, format string, args ...any) {
	b.warns = append(b.warns, Warning{Where: b.file + ": " + where, Message: fmt.Sprintf(format, args...)})
}

// typesOf splits a schema's type list into the non-null types and whether
// null is allowed.
func typesOf(s *openapi3.Schema) (types []string, nullable bool) {
	nullable = s.Nullable
	if s.Type != nil {
		for _, t := range *s.Type {
			if t == openapi3.TypeNull {
				nullable = true
				continue
			}
			types = append(types, t)
		}
	}
	return types, nullable
}

func isObjectish(s *openapi3.Schema, types []string) bool {
	if len(types) == 1 && types[0] == openapi3.TypeObject {
		return true
	}
	return len(types) == 0 && (len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil)
}

// needsNamedType reports whether an inline schema becomes a named type.
func needsNamedType(s *openapi3.Schema) bool {
	types, _ := typesOf(s)
	if len(s.AllOf) > 0 || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return true
	}
	if len(types) == 1 && types[0] == openapi3.TypeString && len(stringEnum(s)) > 0 {
		return true
	}
	return isObjectish(s, types) && len(s.Properties) > 0
}

func stringEnum(s *openapi3.Schema) []string {
	var out []string
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			out = append(out, str)
		} else if v != nil {
			return nil
		}
	}
	return out
}

// goType returns the Go type of a schema; inline schemas that need a name get
// hint as their name.
func (b *builder) goType(sr *openapi3.SchemaRef, hint, loc string) GoType {
	if sr == nil || sr.Value == nil {
		return GoType{Kind: GoAny}
	}
	s := sr.Value
	if name, ok := b.bySchema[s]; ok {
		return GoType{Kind: GoNamed, Name: name}
	}
	if name, ok := b.byRef[sr.Ref]; ok && sr.Ref != "" {
		return GoType{Kind: GoNamed, Name: name}
	}
	if sr.Ref != "" && needsNamedType(s) {
		// A schema in another file or outside components: name it after the
		// last segment of its $ref.
		name := b.name(goName(sr.Ref[strings.LastIndexAny(sr.Ref, "/#")+1:]), sr.Ref)
		if !b.ns.claim(name, sr.Ref) {
			return GoType{Kind: GoAny}
		}
		b.bySchema[s] = name
		b.byRef[sr.Ref] = name
		b.declare(name, s, sr.Ref)
		return GoType{Kind: GoNamed, Name: name}
	}
	if needsNamedType(s) {
		hint = b.name(hint, loc)
		if !b.ns.claim(hint, loc) {
			return GoType{Kind: GoAny}
		}
		b.bySchema[s] = hint
		b.declare(hint, s, loc)
		return GoType{Kind: GoNamed, Name: hint}
	}
	return b.plainType(s, hint, loc)
}

// plainType is the Go type of a schema that needs no name of its own.
func (b *builder) plainType(s *openapi3.Schema, hint, loc string) GoType {
	types, _ := typesOf(s)
	if len(types) > 1 {
		return GoType{Kind: GoAny}
	}
	if len(types) == 0 && isObjectish(s, types) {
		types = []string{openapi3.TypeObject}
	}
	if len(types) == 0 {
		if s.Items != nil {
			types = []string{openapi3.TypeArray}
		} else {
			return GoType{Kind: GoAny}
		}
	}
	switch types[0] {
	case openapi3.TypeString:
		switch s.Format {
		case "date-time":
			return GoType{Kind: GoTime}
		case "uuid":
			return GoType{Kind: GoUUID}
		case "binary", "byte":
			return GoType{Kind: GoBytes}
		}
		return GoType{Kind: GoBuiltin, Name: "string"}
	case openapi3.TypeInteger:
		if s.Format == "int32" {
			return GoType{Kind: GoBuiltin, Name: "int32"}
		}
		return GoType{Kind: GoBuiltin, Name: "int64"}
	case openapi3.TypeNumber:
		if s.Format == "float" {
			return GoType{Kind: GoBuiltin, Name: "float32"}
		}
		return GoType{Kind: GoBuiltin, Name: "float64"}
	case openapi3.TypeBoolean:
		return GoType{Kind: GoBuiltin, Name: "bool"}
	case openapi3.TypeArray:
		elem := b.goType(s.Items, hint+"Item", loc+"/items")
		return GoType{Kind: GoSlice, Elem: &elem}
	case openapi3.TypeObject:
		ap := s.AdditionalProperties
		elem := GoType{Kind: GoAny}
		if ap.Schema != nil {
			elem = b.goType(ap.Schema, hint+"Value", loc+"/additionalProperties")
		}
		return GoType{Kind: GoMap, Elem: &elem}
	}
	return GoType{Kind: GoAny}
}

// declare builds the named type name for schema s.
func (b *builder) declare(name string, s *openapi3.Schema, loc string) {
	t := &Type{Name: name, Location: loc, Doc: firstLine(s.Description)}
	b.types[name] = t
	b.building[name] = true
	defer delete(b.building, name)
	types, _ := typesOf(s)
	switch {
	case len(s.AllOf) > 0:
		t.Kind = KindStruct
		seen := map[string]string{}
		var walk func(s *openapi3.Schema, loc string)
		walk = func(s *openapi3.Schema, loc string) {
			for i, sub := range s.AllOf {
				if sub != nil && sub.Value != nil {
					subloc := loc + "/allOf/" + strconv.Itoa(i)
					if sub.Ref != "" {
						subloc = sub.Ref
					}
					walk(sub.Value, subloc)
				}
			}
			b.addFields(t, s, loc, seen)
		}
		walk(s, loc)
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		t.Kind = KindUnion
		members, kw := s.OneOf, "oneOf"
		if len(members) == 0 {
			members, kw = s.AnyOf, "anyOf"
		}
		used := map[string]bool{}
		for i, m := range members {
			gt := b.goType(m, fmt.Sprintf("%sVariant%d", name, i+1), fmt.Sprintf("%s/%s/%d", loc, kw, i))
			vname := variantName(gt)
			if vname == "" || used[vname] {
				vname = fmt.Sprintf("Variant%d", i+1)
			}
			used[vname] = true
			b.ns.claim(name+"From"+vname, fmt.Sprintf("%s/%s/%d", loc, kw, i))
			t.Variants = append(t.Variants, Variant{Name: vname, Type: gt})
		}
	case len(types) == 1 && types[0] == openapi3.TypeString && len(stringEnum(s)) > 0:
		t.Kind = KindEnum
		for _, v := range stringEnum(s) {
			cname := name + enumSuffix(v)
			if b.ns.claim(cname, fmt.Sprintf("%s enum value %q", loc, v)) {
				t.Enum = append(t.Enum, EnumValue{Name: cname, Value: v})
			}
		}
	case isObjectish(s, types) && len(s.Properties) > 0:
		t.Kind = KindStruct
		b.addFields(t, s, loc, map[string]string{})
	default:
		t.Kind = KindAlias
		t.Alias = b.plainType(s, name, loc)
	}
}

func (b *builder) addFields(t *Type, s *openapi3.Schema, loc string, seen map[string]string) {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, pname := range sortedKeys(s.Properties) {
		pr := s.Properties[pname]
		ploc := loc + "/properties/" + pname
		fname := goName(pname)
		if prev, ok := seen[fname]; ok {
			if prev == pname { // allOf restating a property: keep the first, merge required
				for _, f := range t.Fields {
					if f.JSONName == pname && required[pname] && !f.Required {
						f.Required = true
						if f.Type.Kind == GoPointer {
							f.Type = *f.Type.Elem
						}
					}
				}
				continue
			}
			b.errs.addf("%s: Go field %s.%s is generated for both properties %q and %q (%s)", b.file, t.Name, fname, prev, pname, loc)
			continue
		}
		seen[fname] = pname
		gt := b.goType(pr, t.Name+fname, ploc)
		nullable := false
		if pr != nil && pr.Value != nil {
			_, nullable = typesOf(pr.Value)
		}
		req := required[pname]
		if (!req || nullable || b.building[gt.Name]) && !gt.nilable() {
			gt = ptr(gt)
		}
		doc := ""
		if pr != nil && pr.Value != nil {
			doc = firstLine(pr.Value.Description)
		}
		t.Fields = append(t.Fields, &Field{Name: fname, JSONName: pname, Type: gt, Required: req, Doc: doc})
	}
	// Required names that come from allOf members without the property.
	for _, f := range t.Fields {
		if required[f.JSONName] && !f.Required {
			f.Required = true
		}
	}
}

func variantName(t GoType) string {
	switch t.Kind {
	case GoNamed:
		return t.Name
	case GoBuiltin:
		return goName(t.Name)
	case GoTime:
		return "Time"
	case GoUUID:
		return "UUID"
	case GoBytes:
		return "Bytes"
	case GoSlice:
		if n := variantName(*t.Elem); n != "" {
			return n + "List"
		}
	case GoMap:
		if n := variantName(*t.Elem); n != "" {
			return n + "Map"
		}
	}
	return ""
}

func enumSuffix(v string) string {
	if v == "" {
		return "Empty"
	}
	n := goName(v)
	if strings.HasPrefix(n, "X") && !strings.HasPrefix(strings.ToUpper(v), "X") {
		return n[1:] // a value starting with a digit: Status200 rather than StatusX200
	}
	return n
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

var idempotentByDefault = map[string]bool{http.MethodPost: true, http.MethodPatch: true}

func (b *builder) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation, root *policyPatch, cfg *Config) *Operation {
	method = strings.ToUpper(method)
	id := op.OperationID
	if id == "" {
		id = lowerName(strings.ToLower(method) + " " + path)
	}
	o := &Operation{ID: id, GoName: goName(id), Method: method, Path: path, Summary: firstLine(op.Summary), Deprecated: op.Deprecated,
		Location: "#/paths/" + pointerEscape(path) + "/" + strings.ToLower(method)}
	if o.Summary == "" {
		o.Summary = firstLine(op.Description)
	}
	where := fmt.Sprintf("%s: operation %q: ", b.file, id)
	for _, suffix := range []string{"Request", "Response"} {
		b.ns.claim(o.GoName+suffix, fmt.Sprintf("operation %q (%s %s)", id, method, path))
	}

	// Route pattern.
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.Contains(seg, "{") {
			if !strings.HasPrefix(seg, "{") || !strings.HasSuffix(seg, "}") || strings.Count(seg, "{") != 1 {
				b.errs.addf("%spath segment %q: a parameter must fill a whole segment (net/http.ServeMux)", where, seg)
				continue
			}
			name := seg[1 : len(seg)-1]
			o.PathParams = append(o.PathParams, muxWildcard(name))
			segs[i] = "{" + muxWildcard(name) + "}"
		}
	}
	o.Pattern = strings.Join(segs, "/")
	if strings.HasSuffix(o.Pattern, "/") {
		o.Pattern += "{$}"
	}

	// Responses first: replayStatuses are checked against them.
	b.responses(o, op)

	// Idempotency policy.
	v, hasExt := op.Extensions["x-idempotent"]
	var patch *policyPatch
	optOut := false
	if hasExt {
		patch, optOut = parseExtension(v, where, b.errs)
	}
	switch {
	case optOut:
		if cfg.RequireIdempotent && idempotentByDefault[method] {
			b.errs.addf("%sx-idempotent: false is not allowed: the config requires every POST and PATCH to be idempotent", where)
		}
	case hasExt:
		o.Idempotent = patch != nil
	case root != nil && idempotentByDefault[method]:
		o.Idempotent = true
	}
	if o.Idempotent {
		o.Policy = patch.apply(root.apply(DefaultPolicy()))
		declared := map[int]bool{}
		for _, r := range o.Responses {
			declared[r.Code] = r.Code != 0
		}
		if patch != nil && patch.set["replayStatuses"] {
			for _, st := range o.Policy.ReplayStatuses {
				if !declared[st] {
					b.errs.addf("%sx-idempotent.replayStatuses: %d is not a response the operation declares", where, st)
				}
			}
		} else if o.Policy.ReplayStatuses != nil {
			// Root statuses apply where the operation declares them.
			var kept []int
			for _, st := range o.Policy.ReplayStatuses {
				if declared[st] {
					kept = append(kept, st)
				}
			}
			o.Policy.ReplayStatuses = kept
		}
		if o.Policy.SchemaVersion == "auto" {
			o.Policy.SchemaVersion = schemaVersion(op)
		}
	}

	b.params(o, item, op, where)
	b.body(o, op, where)
	return o
}

func pointerEscape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

func muxWildcard(name string) string {
	if isGoIdent(name) {
		return name
	}
	return lowerName(name)
}

func (b *builder) responses(o *Operation, op *openapi3.Operation) {
	if op.Responses == nil {
		return
	}
	for _, status := range op.Responses.Keys() {
		rr := op.Responses.Value(status)
		if rr == nil || rr.Value == nil {
			continue
		}
		r := &Response{Status: status}
		label := strings.ToUpper(status)
		if status == "default" {
			label = "Default"
		} else if c, err := strconv.Atoi(status); err == nil {
			r.Code = c
		}
		r.TypeName = o.GoName + label + "Response"
		b.ns.claim(r.TypeName, fmt.Sprintf("operation %q response %s", o.ID, status))
		if rr.Value.Description != nil {
			r.Description = firstLine(*rr.Value.Description)
		}
		if mt, media := pickMedia(rr.Value.Content); media != nil {
			r.MediaType = mt
			r.JSON = isJSON(mt)
			if r.JSON {
				r.Body = b.goType(media.Schema, r.TypeName+"Body", fmt.Sprintf("%s/responses/%s/content/%s/schema", o.Location, status, pointerEscape(mt)))
			} else {
				r.Body = GoType{Kind: GoBytes}
			}
		}
		fields := map[string]bool{"Body": true, "Status": true}
		for _, h := range sortedKeys(rr.Value.Headers) {
			f := goName(h)
			if fields[f] || strings.EqualFold(h, "Content-Type") {
				continue
			}
			fields[f] = true
			r.Headers = append(r.Headers, Header{Name: http.CanonicalHeaderKey(h), Field: f})
		}
		o.Responses = append(o.Responses, r)
	}
	sort.SliceStable(o.Responses, func(i, j int) bool { return statusOrder(o.Responses[i].Status) < statusOrder(o.Responses[j].Status) })
}

func statusOrder(s string) string {
	if s == "default" {
		return "9999"
	}
	return s
}

func isJSON(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*" || mt == "application/*"
}

// pickMedia chooses the media type a generated handler speaks: JSON when
// offered, otherwise the first in sorted order.
func pickMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	if len(c) == 0 {
		return "", nil
	}
	keys := sortedKeys(c)
	for _, k := range keys {
		if isJSON(k) && k != "*/*" {
			return k, c[k]
		}
	}
	return keys[0], c[keys[0]]
}

func (b *builder) params(o *Operation, item *openapi3.PathItem, op *openapi3.Operation, where string) {
	type key struct{ in, name string }
	merged := map[key]*openapi3.Parameter{}
	var order []key
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			k := key{pr.Value.In, pr.Value.Name}
			if _, ok := merged[k]; !ok {
				order = append(order, k)
			}
			merged[k] = pr.Value
		}
	}
	sort.Slice(order, func(i, j int) bool {
		ri, rj := inRank(order[i].in), inRank(order[j].in)
		if ri != rj {
			return ri < rj
		}
		return order[i].name < order[j].name
	})
	fields := map[string]string{"Body": "the request body"}
	for _, k := range order {
		p := merged[k]
		prm := &Param{Name: p.Name, Key: p.Name, In: p.In, Field: goName(p.Name), Required: p.Required || p.In == "path", Explode: p.Explode == nil || *p.Explode}
		loc := fmt.Sprintf("%s parameter %q", p.In, p.Name)
		if prev, ok := fields[prm.Field]; ok {
			b.errs.addf("%sGo field %s.%s is generated for both %s and %s", where, o.RequestType(), prm.Field, prev, loc)
			continue
		}
		fields[prm.Field] = loc
		if p.In == "path" {
			prm.Key = muxWildcard(p.Name)
		}
		var sr *openapi3.SchemaRef
		if p.Schema != nil {
			sr = p.Schema
		}
		hint := o.GoName + goName(p.Name)
		b.paramType(prm, sr, hint, o.Location+"/parameters/"+p.Name, where)
		o.Params = append(o.Params, prm)
	}
}

func inRank(in string) int {
	switch in {
	case "path":
		return 0
	case "query":
		return 1
	case "header":
		return 2
	}
	return 3
}

func (b *builder) paramType(p *Param, sr *openapi3.SchemaRef, hint, loc, where string) {
	str := GoType{Kind: GoBuiltin, Name: "string"}
	if sr == nil || sr.Value == nil {
		p.Type, p.Parse = str, "ParseString"
		return
	}
	s := sr.Value
	types, _ := typesOf(s)
	if len(types) == 1 && types[0] == openapi3.TypeArray && p.In != "path" {
		p.List = true
		elem := b.goType(s.Items, hint+"Item", loc+"/items")
		if parse, ok := b.scalarParse(elem); ok {
			p.Type, p.Parse = elem, parse
			return
		}
	} else {
		gt := b.goType(sr, hint, loc)
		if parse, ok := b.scalarParse(gt); ok {
			p.Type, p.Parse = gt, parse
			return
		}
	}
	b.warnf(fmt.Sprintf("%s %s", strings.TrimSuffix(where, ": "), p.Where()), "schema is not a scalar or a list of scalars; passed as a raw string")
	p.List = false
	p.Type, p.Parse = str, "ParseString"
}

func (b *builder) scalarParse(t GoType) (string, bool) {
	switch t.Kind {
	case GoTime:
		return "ParseTime", true
	case GoUUID:
		return "ParseUUID", true
	case GoBuiltin:
		return "Parse" + goName(t.Name), true
	case GoNamed:
		nt := b.types[t.Name]
		if nt == nil {
			return "", false
		}
		switch nt.Kind {
		case KindEnum:
			return "ParseEnum[" + nt.Name + "]", true
		case KindAlias:
			return b.scalarParse(nt.Alias)
		}
	}
	return "", false
}

func (b *builder) body(o *Operation, op *openapi3.Operation, where string) {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return
	}
	rb := op.RequestBody.Value
	mt, media := pickMedia(rb.Content)
	if media == nil {
		return
	}
	body := &Body{MediaType: mt, JSON: isJSON(mt), Required: rb.Required}
	if body.JSON {
		body.Type = b.goType(media.Schema, o.GoName+"RequestBody", fmt.Sprintf("%s/requestBody/content/%s/schema", o.Location, pointerEscape(mt)))
		if !body.Required && !body.Type.nilable() {
			body.Type = ptr(body.Type)
		}
	} else {
		body.Type = GoType{Kind: GoBytes}
	}
	o.Body = body
}

// checkRoutes refuses two operations ServeMux would reject as conflicting.
func (b *builder) checkRoutes(ops []*Operation) {
	seen := map[string]*Operation{}
	for _, o := range ops {
		shape := o.Method + " " + wildcardRE(o.Pattern)
		if prev, ok := seen[shape]; ok {
			b.errs.addf("%s: operations %q (%s %s) and %q (%s %s) have the same route", b.file, prev.ID, prev.Method, prev.Path, o.ID, o.Method, o.Path)
			continue
		}
		seen[shape] = o
	}
}

func wildcardRE(p string) string {
	var out strings.Builder
	depth := 0
	for _, r := range p {
		switch {
		case r == '{':
			depth++
			out.WriteString("{}")
		case r == '}':
			depth--
		case depth == 0:
			out.WriteRune(r)
		}
	}
	return out.String()
}

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
