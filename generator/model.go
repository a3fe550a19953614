package generator

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"
)

// Model is everything the renderers need, decided once: names, order, types
// and policies. Templates receive *Model (see templates/README.md).
type Model struct {
	Package  string  // Go package name
	Source   string  // spec path relative to the output dir, slash-separated
	BasePath string  // prefix of every route pattern, from the config
	Types    []*Type // every named type, sorted by name
	// RequestSchemas is the table of request schema descriptors the
	// generated decoders validate against (idemimpl.Schemas).
	RequestSchemas []*ReqSchema
	Operations     []*Operation // sorted by path, then method
	// Webhooks are the OpenAPI 3.1 webhooks, sorted by name.
	Webhooks []*Webhook
	// WebhookSource is the CloudEvents source of the events the webhook
	// senders enqueue, from the config (webhookSource).
	WebhookSource string
	// Client says whether and how client.gen.go is rendered (the config's
	// client section).
	Client   ClientModel
	Warnings []Warning
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
	// ownExclusions: the fingerprint exclusions are the operation's own,
	// not the root's (which apply where they name something).
	ownExclusions bool
}

// RequestType, ResponseType and friends name the operation's Go identifiers.
func (o *Operation) RequestType() string  { return o.GoName + "Request" }
func (o *Operation) ResponseType() string { return o.GoName + "Response" }
func (o *Operation) Handler() string      { return "handle" + o.GoName }
func (o *Operation) Decoder() string      { return "decode" + o.GoName + "Request" }
func (o *Operation) OpVar() string        { return "op" + o.GoName }
func (o *Operation) ParamsVar() string    { return "params" + o.GoName }
func (o *Operation) BodyVar() string      { return "body" + o.GoName }
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
	List     bool   // an array, typed []Type
	Key      string // lookup key: the spec name, or the ServeMux wildcard of a path parameter
	// Style is the idemimpl.Style constant of its serialisation
	// (StyleForm, StyleDeepObject, ...; StyleJSON for content:
	// application/json), and Explode its explode.
	Style   string
	Explode bool
	Schema  int // index in Model.RequestSchemas
	// Fingerprint is whether the parameter is part of the idempotency
	// fingerprint: every parameter but the idempotency key header and those
	// x-idempotent.fingerprint.excludeParameters names.
	Fingerprint bool
}

// Where names the parameter in error messages: `query parameter "limit"`.
func (p *Param) Where() string { return p.In + " parameter " + strconv.Quote(p.Name) }

// Body is the request body.
type Body struct {
	MediaType string // the preferred media type: JSON when declared
	JSON      bool   // the preferred media type is JSON
	Type      GoType // the field type (pointer when optional JSON)
	Required  bool
	// Media are the media types accepted, in order of preference: each
	// decodes to Type. Others the spec declares are refused with 415.
	Media []*BodyMedia
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
	req      *reqTable
	// rootExclUsed records the root fingerprint exclusions ("exclude[0]",
	// "excludeParameters[1]") that named something in some operation.
	rootExclUsed map[string]bool
	warns        []Warning
	versions     *versioner
}

var reservedNames = []string{"Server", "Unimplemented", "NewHandler", "Option", "WithMiddleware",
	"WithErrorHook", "WithMaxBodyBytes", "DefaultMaxBodyBytes", "IdempotentOperations"}

func buildModel(doc *openapi3.T, cfg *Config, source string) (*Model, error) {
	file := specName(cfg)
	errs := &errList{}
	b := &builder{doc: doc, file: file, errs: errs, ns: newNamespace(file, errs, append(reservedNames, cfg.Client.clientNames()...)...),
		types: map[string]*Type{}, bySchema: map[*openapi3.Schema]string{}, building: map[string]bool{}, rename: cfg.Rename, byRef: map[string]string{}, versions: newVersioner(doc)}
	b.req = newReqTable(b, cfg.Validation.Skip)
	b.rootExclUsed = map[string]bool{}

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
	b.req.checkSkip(file)
	b.checkRootExclusions(root)
	m.Webhooks = b.webhooks(doc)
	m.WebhookSource = cfg.WebhookSource
	if err := errs.err(); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(b.types) {
		m.Types = append(m.Types, b.types[name])
	}
	m.Warnings = b.warns
	m.RequestSchemas = b.req.list
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
