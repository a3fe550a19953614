package generator

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// Model is everything the renderers need, decided once: names, order, types
// and policies. Templates receive *Model (see templates/README.md).
type Model struct {
	Package  string  // Go package name
	Version  string  // idemgen version in the file headers; "(devel)" when not a release
	Source   string  // the spec as the config names it, else as given (Config.Source), slash-separated
	BasePath string  // prefix of every route pattern: the config's basePath, else the path of the spec's first server ("" for none)
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
	// SecuritySchemes are the security schemes operations require, sorted
	// by name (see SecurityScheme).
	SecuritySchemes []*SecurityScheme
	// SecurityRequirements are the distinct security requirements of the
	// operations (Operation.SecurityIndex).
	SecurityRequirements [][]SecurityRequirement
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
	KindUnion                  // oneOf/anyOf: struct with one pointer field per member, exactly one set
)

// Type is one named Go type.
type Type struct {
	Name     string
	Doc      string
	Location string // JSON pointer in the spec, e.g. #/components/schemas/Pet
	// Schema is the schema the type is generated from (for a union of
	// deduplicated members, the first use).
	Schema *openapi3.Schema
	Kind   TypeKind
	Fields []*Field // KindStruct
	// AdditionalProperties, when not nil, is the map field (json:"-") that
	// keeps the members not declared in properties; the type's MarshalJSON
	// and UnmarshalJSON move them in and out of it (KindStruct).
	AdditionalProperties *Field
	Alias                GoType      // KindAlias
	Enum                 []EnumValue // KindEnum
	Variants             []*Variant  // KindUnion
	// Discriminator is the member property whose value selects the
	// variant (KindUnion); "" when members are tried in order.
	Discriminator string
	// WriteOnly reports that the type reaches a writeOnly member: responses
	// send a copy without them (its withoutWriteOnly method).
	WriteOnly bool

	// Shared counts the other inline schemas of the same shape that this
	// type stands for (share.go); 0 when it is generated from one schema.
	Shared int

	ident    *ident
	fields   *scope // names of the fields or variants
	building bool
	inline   bool   // named after where it stands: a candidate for sharing
	suffix   string // an inline type's name after its parent's (the property's, "Item", ...)
}

// Required returns the JSON names of the required fields that every
// direction must carry (readOnly and writeOnly members are required only in
// responses and requests respectively; the request validator checks those).
func (t *Type) Required() []string {
	var out []string
	for _, f := range t.Fields {
		if f.Required && !f.ReadOnly && !f.WriteOnly {
			out = append(out, f.JSONName)
		}
	}
	return out
}

// Field is one struct field, generated from one property.
type Field struct {
	Name     string // Go field
	JSONName string // the property's name, exactly as in the spec
	Doc      string
	// Type is the field's Go type: the property's type T, *T when optional
	// (or nullable and required), idem.Nullable[T] when optional and
	// nullable; slices and maps stay as they are when not nullable.
	Type     GoType
	Required bool
	Nullable bool
	// ReadOnly members are sent only in responses; a request carrying one is
	// refused by the request validator. WriteOnly members are sent only in
	// requests: the field is never required in Go, and responses omit it.
	ReadOnly, WriteOnly bool
	// Default is the schema's default value, nil when there is none.
	Default *Default
	// Schema is the property's schema (with its $ref, when it has one).
	Schema   *openapi3.SchemaRef
	Location string // JSON pointer of the property, e.g. #/components/schemas/Pet/properties/name

	baseType     GoType // the property's type before optionality
	baseNullable bool
}

// TagName reports whether the field's JSON name can be the name of an
// encoding/json struct tag: letters, digits and the punctuation
// encoding/json accepts there, without the space go vet objects to, and
// not "-". Other fields are tagged json:"-" and carried by the type's
// MarshalJSON and UnmarshalJSON (idemimpl.AppendNamed, UnmarshalNamed),
// so that the wire name is the spec's exactly.
func (f *Field) TagName() bool {
	if f.JSONName == "" || f.JSONName == "-" {
		return false
	}
	for _, r := range f.JSONName {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~", r) {
			return false
		}
	}
	return true
}

// Default is a schema's default value.
type Default struct {
	JSON  string // the value as JSON
	Value any    // the value as the spec's YAML/JSON decoder gave it
	// Go is a Go expression of the value's type (the field's type without
	// pointer or Nullable): `int64(10)`, `"eur"`, `PetStatusAvailable`;
	// "" when the value has none (objects, arrays): decode JSON instead.
	Go string
}

// EnumValue is one constant of an enum type.
type EnumValue struct{ Name, Value string }

// Variant is one member of a union: a pointer field of the union struct.
type Variant struct {
	Name string // the field
	Type GoType // the member's type (the field is a pointer to it)
	// JSON lists the JSON types the member accepts ("object", "array",
	// "string", "number", "boolean"); nil when it accepts any.
	JSON []string
	// Tags are the discriminator values that select the member.
	Tags     []string
	Location string
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
	GoDate     // idem.Date
	GoNullable // idem.Nullable[Elem]
	GoOrEmpty  // idem.OrEmpty[Elem]
	GoReader   // io.Reader: a binary request body, read as a stream
	GoFile     // idem.File: a file part of a multipart/form-data body
)

// GoType is a Go type expression.
type GoType struct {
	Kind  GoKind
	Name  string  // GoBuiltin
	Named *Type   // GoNamed
	Elem  *GoType // GoSlice, GoMap, GoPointer, GoNullable, GoOrEmpty
}

func (t GoType) nilable() bool {
	switch t.Kind {
	case GoAny, GoBytes, GoSlice, GoMap, GoPointer, GoReader:
		return true
	}
	return false
}

func ptr(t GoType) GoType { return GoType{Kind: GoPointer, Elem: &t} }

func named(t *Type) GoType { return GoType{Kind: GoNamed, Named: t} }

// TypeName is the name of a GoNamed type ("" for other kinds).
func (t GoType) TypeName() string {
	if t.Kind == GoNamed && t.Named != nil {
		return t.Named.Name
	}
	return ""
}

// String renders the type as Go source (for templates and comments).
func (t GoType) String() string {
	switch t.Kind {
	case GoAny:
		return "any"
	case GoBuiltin:
		return t.Name
	case GoNamed:
		return t.TypeName()
	case GoTime:
		return "time.Time"
	case GoUUID:
		return "uuid.UUID"
	case GoDate:
		return "idem.Date"
	case GoBytes:
		return "[]byte"
	case GoReader:
		return "io.Reader"
	case GoFile:
		return "idem.File"
	case GoSlice:
		return "[]" + t.Elem.String()
	case GoMap:
		return "map[string]" + t.Elem.String()
	case GoPointer:
		return "*" + t.Elem.String()
	case GoNullable:
		return "idem.Nullable[" + t.Elem.String() + "]"
	case GoOrEmpty:
		return "idem.OrEmpty[" + t.Elem.String() + "]"
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
	PathParams []string // path parameters' names, in path order (r.PathValue keys)
	// Segments are the path segments whose ServeMux wildcard the handler
	// splits into parameters (see route.go); nil when every path parameter
	// is a wildcard of Pattern.
	Segments   []PathSegment
	Summary    string
	Deprecated bool
	Idempotent bool
	Policy     Policy // resolved; SchemaVersion is never "auto" here
	// Limits bound the decoding of the request (x-request-limits); nil
	// when they are idemimpl's defaults.
	Limits    *RequestLimits
	Params    []*Param
	Body      *Body // nil: no request body
	Responses []*Response
	Location  string // JSON pointer, e.g. #/paths/~1payments/post
	// Security lists the alternatives of the operation's security
	// requirements (its own, else the document's); nil when it requires
	// none. Checked before the idempotency engine runs.
	Security      []SecurityRequirement
	SecurityIndex int // in Model.SecurityRequirements

	// RequestTypeName and ResponseTypeName are GoName+"Request" and
	// GoName+"Response" unless a schema of the same name took them first.
	RequestTypeName, ResponseTypeName string

	segs          []pathSeg   // the path template's segments
	route         *RouteGroup // the ServeMux route serving the operation
	ident         *ident
	requestFields *scope // fields of the request type
	// ownExclusions: the fingerprint exclusions are the operation's own,
	// not the root's (which apply where they name something).
	ownExclusions bool
}

// RequestType, ResponseType and friends name the operation's Go identifiers.
func (o *Operation) RequestType() string  { return o.RequestTypeName }
func (o *Operation) ResponseType() string { return o.ResponseTypeName }
func (o *Operation) Handler() string      { return "handle" + o.GoName }
func (o *Operation) Decoder() string      { return "decode" + o.GoName + "Request" }
func (o *Operation) OpVar() string        { return "op" + o.GoName }
func (o *Operation) ParamsVar() string    { return "params" + o.GoName }
func (o *Operation) BodyVar() string      { return "body" + o.GoName }
func (o *Operation) LimitsVar() string    { return "limits" + o.GoName }
func (o *Operation) Marker() string       { return "is" + o.GoName + "Response" }

// Route is the ServeMux pattern with method, e.g. "POST /payments/{id}".
func (o *Operation) Route(basePath string) string { return o.Method + " " + basePath + o.Pattern }

// PathPattern is Pattern without net/http.ServeMux's end anchor: "/" rather
// than "/{$}", as routers other than ServeMux (chi) write an exact path.
func (o *Operation) PathPattern() string { return strings.TrimSuffix(o.Pattern, "{$}") }

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
	// Stream: a media type is read as a stream (a binary body, or
	// multipart/form-data whose file parts are spooled, not held in memory).
	Stream bool
}

// Streamed reports whether the operation's body is read as a stream
// (idem.Engine.ServeStream, idemimpl.Request.BodyStream).
func (o *Operation) Streamed() bool { return o.Body != nil && o.Body.Stream }

// Response is one declared status of an operation.
type Response struct {
	Status      string // "201", "2XX", "default"
	Code        int    // 0 for ranges and default: the type then has a Status field
	TypeName    string
	Description string
	MediaType   string // "" when there is no body
	JSON        bool
	Body        GoType
	Headers     []*Header
}

// Header is a response header field of a response type.
type Header struct {
	Name  string // canonical header name: X-Rate-Limit
	Field string
	// Type is the Go type of the field: string (sent when not empty), or the
	// schema's scalar type, a pointer when the header is optional (sent when
	// not nil). idemimpl.HeaderValue formats it.
	Type     GoType
	Required bool
	// Parse is the idemimpl function that parses the header's value (its
	// element's, when Type is a pointer): ParseString, ParseInt64,
	// ParseEnum[Status]; a client decodes the header with it.
	Parse string
}

// Pointer reports whether the header's field is a pointer (optional, not a string).
func (h *Header) Pointer() bool { return h.Type.Kind == GoPointer }

type builder struct {
	doc      *openapi3.T
	file     string
	errs     *errList
	names    *namer
	types    []*Type
	bySchema map[*openapi3.Schema]*Type
	byRef    map[string]*Type // types of schemas outside components, by $ref
	unions   map[string]*Type // unions of named or scalar members, by members
	defaults []*Field         // fields whose Default.Go is spelt after naming
	warns    []Warning
	versions *versioner
	methods  *scope // of Server
	// schemes are the security schemes requirements name, by name;
	// secMethods the methods of Security.
	schemes    map[string]*SecurityScheme
	secMethods *scope
	req        *reqTable
	// rootExclUsed records the root fingerprint exclusions ("exclude[0]",
	// "excludeParameters[1]") that named something in some operation.
	rootExclUsed map[string]bool
	// rootProblems are the policy objections reported at the root.
	rootProblems map[string]bool
	// rootLimits is the document's x-request-limits.
	rootLimits limitsPatch

	// fileParts is set while the schema of a multipart/form-data body is
	// typed: a binary string there is a file part (idem.File).
	fileParts bool
	parts     partTypes // multipart variants of named types (multipart.go)
}

// reservedNames are package-level identifiers of the generated server.
var reservedNames = []string{"Server", "Unimplemented", "NewHandler", "Option", "WithMiddleware",
	"WithErrorHook", "WithMaxBodyBytes", "DefaultMaxBodyBytes", "IdempotentOperations", "BasePath", "WithBasePath",
	"Route", "Routes"}

// typeMethods are the methods a generated struct or union may have; no
// field takes their names.
var typeMethods = []string{"MarshalJSON", "UnmarshalJSON"}

func buildModel(doc *openapi3.T, cfg *Config, source string) (*Model, error) {
	file := specName(cfg)
	errs := &errList{}
	b := &builder{doc: doc, file: file, errs: errs, names: newNamer(file, cfg.Rename, errs),
		bySchema: map[*openapi3.Schema]*Type{}, byRef: map[string]*Type{}, unions: map[string]*Type{}, versions: newVersioner(doc), rootProblems: map[string]bool{}}
	b.names.pkg.reserve(append(reservedNames, cfg.Client.clientNames()...)...)
	b.methods = b.names.scope("methods of Server")
	b.schemes, b.secMethods = map[string]*SecurityScheme{}, b.names.scope("methods of Security")
	b.req = newReqTable(b, cfg.Validation.Skip)
	b.rootExclUsed = map[string]bool{}

	// Component schemas first so that refs find their types.
	if doc.Components != nil {
		names := sortedKeys(doc.Components.Schemas)
		var declared []*Type
		for _, name := range names {
			sr := doc.Components.Schemas[name]
			if sr == nil || sr.Value == nil {
				continue
			}
			if _, ok := b.bySchema[sr.Value]; ok {
				continue // a component that is only a $ref to another
			}
			loc := "#/components/schemas/" + pointerEscape(name)
			t := b.newType(sr.Value, loc)
			want := goName(name)
			t.ident = b.names.typeIdent(&t.Name, want, loc, rankComponent, closeness(name, want))
			declared = append(declared, t)
		}
		for _, t := range declared {
			if t.Kind == kindUndeclared {
				b.declare(t)
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
		if root != nil {
			b.checkPolicy(root.apply(DefaultPolicy()), file+": ", nil, nil, true)
		}
	}

	if v, ok := doc.Extensions[limitsExt]; ok {
		b.rootLimits = parseLimits(v, file+": ", errs)
		b.checkLimits(b.rootLimits.apply(defaultLimits()), b.rootLimits, file+": ")
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
	b.finishSecurity(m)
	b.req.checkSkip(file)
	b.checkRootExclusions(root)
	m.Webhooks = b.webhooks(doc)
	m.WebhookSource = cfg.WebhookSource
	b.shareInline(m.Operations, m.Webhooks, cfg.Rename)
	b.names.resolve()
	if err := errs.err(); err != nil {
		return nil, err
	}
	b.spellDefaults()
	finishParams(m.Operations)
	markWriteOnly(b.types)
	m.Types = b.types
	sort.Slice(m.Types, func(i, j int) bool { return m.Types[i].Name < m.Types[j].Name })
	m.Warnings = append(b.warns, b.names.warns...)
	m.RequestSchemas = b.req.list
	return m, nil
}

// newType registers the named type generated for schema s.
func (b *builder) newType(s *openapi3.Schema, loc string) *Type {
	t := &Type{Location: loc, Schema: s, Doc: firstLine(s.Description), Kind: kindUndeclared}
	b.types = append(b.types, t)
	if s != nil {
		b.bySchema[s] = t
	}
	return t
}

// warnf adds a warning at where: a location or a phrase ("operation
// \"x\""), which may already start with the spec file's name (the "where"
// prefix of error messages): the file is named once.
func (b *builder) warnf(where, format string, args ...any) {
	where = strings.TrimSuffix(strings.TrimPrefix(where, b.file+": "), ": ")
	b.warns = append(b.warns, Warning{Where: b.file + ": " + where, Message: fmt.Sprintf(format, args...)})
}
