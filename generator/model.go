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
	// RouteGroups are the ServeMux routes, in the order of the operations
	// (Routes).
	RouteGroups []*RouteGroup
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
	Kind     TypeKind
	Fields   []*Field // KindStruct
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
}

// typeBuild is what the builder keeps about a type while it builds the
// model (builder.tb); none of it is left in the model.
type typeBuild struct {
	// schema is the schema the type is generated from (for a union of
	// deduplicated members, the first use).
	schema   *openapi3.Schema
	ident    *ident
	fields   *scope // names of the fields or variants
	building bool
	inline   bool   // named after where it stands: a candidate for sharing
	suffix   string // an inline type's name after its parent's (the property's, "Item", ...)
}

// tb returns the builder's state of t.
func (b *builder) tb(t *Type) *typeBuild {
	tb := b.typeState[t]
	if tb == nil {
		tb = &typeBuild{}
		b.typeState[t] = tb
	}
	return tb
}

// fieldBuild is what the builder keeps about a field: its property's type
// before optionality.
type fieldBuild struct {
	baseType     GoType
	baseNullable bool
}

func (b *builder) fb(f *Field) *fieldBuild {
	fb := b.fieldState[f]
	if fb == nil {
		fb = &fieldBuild{}
		b.fieldState[f] = fb
	}
	return fb
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
	Default  *Default
	Location string // JSON pointer of the property, e.g. #/components/schemas/Pet/properties/name
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
	// Type is the value's type: the field's type without pointer or
	// Nullable. Go() spells the value as a Go expression of it.
	Type GoType
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
	// Names are the generated code's own names for the operation.
	Names OperationNames
}

// opBuild is what the builder keeps about an operation while it builds the
// model (builder.ob).
type opBuild struct {
	segs          []pathSeg // the path template's segments
	ident         *ident
	requestFields *scope // fields of the request type
	// ownExclusions: the fingerprint exclusions are the operation's own,
	// not the root's (which apply where they name something).
	ownExclusions bool
}

// ob returns the builder's state of o.
func (b *builder) ob(o *Operation) *opBuild {
	st := b.opState[o]
	if st == nil {
		st = &opBuild{}
		b.opState[o] = st
	}
	return st
}

// OperationNames are the names the generated code declares for an
// operation's own use, derived from its GoName through the namer (a clash
// numbers the later one, with a warning).
type OperationNames struct {
	Handler      string // handle<Op>: the handler's method serving it
	Decoder      string // decode<Op>Request: its request decoder
	Op           string // op<Op>: its idem.Operation
	Params       string // params<Op>: its parameters' table
	Body         string // body<Op>: its body's table
	Limits       string // limits<Op>: its request limits
	Marker       string // is<Op>Response: the method of its response types
	Segments     string // pathSegments<Op>: its split path segments
	ClientOp     string // clientOp<Op>: the client's idemclient.Operation ("" without a client)
	ClientReader string // read<Op>Response: the client's response reader ("" without a client)
}

// RequestType, ResponseType and friends name the operation's Go identifiers.
func (o *Operation) RequestType() string  { return o.RequestTypeName }
func (o *Operation) ResponseType() string { return o.ResponseTypeName }
func (o *Operation) Handler() string      { return o.Names.Handler }
func (o *Operation) Decoder() string      { return o.Names.Decoder }
func (o *Operation) OpVar() string        { return o.Names.Op }
func (o *Operation) ParamsVar() string    { return o.Names.Params }
func (o *Operation) BodyVar() string      { return o.Names.Body }
func (o *Operation) LimitsVar() string    { return o.Names.Limits }
func (o *Operation) Marker() string       { return o.Names.Marker }
func (o *Operation) SegmentsVar() string  { return o.Names.Segments }

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
	// ParseEnum; a client decodes the header with it. ParseEnum is generic:
	// ParseEnumOf is its type argument, the enum type.
	Parse       string
	ParseEnumOf *Type
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
	// typeState and fieldState are the builder's own state of types and
	// fields (tb, fb).
	typeState  map[*Type]*typeBuild
	fieldState map[*Field]*fieldBuild
	opState    map[*Operation]*opBuild
	routes     []*RouteGroup    // checkRoutes
	byRef      map[string]*Type // types of schemas outside components, by $ref
	unions     map[string]*Type // unions of named or scalar members, by members
	defaults   []*Field         // fields whose Default.Type is set once types are shared
	warns      []Warning
	versions   *versioner
	methods    *scope // of Server
	// handlerMethods are the methods of the generated handler type,
	// markers those of unimplementedResponse (the operations' markers).
	handlerMethods, markers *scope
	// clientPkg is the package scope of client.gen.go: the server's, or
	// the client's own package; nil without a client.
	clientPkg *scope
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

func buildModel(doc *openapi3.T, cfg *Config, source string) (*Model, error) {
	file := specName(cfg)
	errs := &errList{}
	b := &builder{doc: doc, file: file, errs: errs, names: newNamer(file, cfg.Rename, errs),
		bySchema: map[*openapi3.Schema]*Type{}, typeState: map[*Type]*typeBuild{}, fieldState: map[*Field]*fieldBuild{}, opState: map[*Operation]*opBuild{}, byRef: map[string]*Type{}, unions: map[string]*Type{}, versions: newVersioner(doc), rootProblems: map[string]bool{}}
	b.names.pkg.reserve(reservedNames[reservedPackage]...)
	switch {
	case cfg.Client.Enabled && cfg.Client.separate():
		b.clientPkg = b.names.scope("client package", reservedNames[reservedClient]...)
	case cfg.Client.Enabled:
		b.clientPkg = b.names.pkg
		b.names.pkg.reserve(reservedNames[reservedClient]...)
	}
	b.handlerMethods = b.names.scope("methods of handler", reservedNames[reservedHandlerMethods]...)
	b.markers = b.names.scope("methods of unimplementedResponse", reservedNames[reservedResponseMarkers]...)
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
			b.tb(t).ident = b.names.typeIdent(&t.Name, want, loc, rankComponent, closeness(name, want))
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
			b.checkPolicy(root.apply(DefaultPolicy()), file+": ", nil, true)
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
	b.typeDefaults()
	finishParams(m.Operations)
	markWriteOnly(b.types)
	m.Types = b.types
	sort.Slice(m.Types, func(i, j int) bool { return m.Types[i].Name < m.Types[j].Name })
	m.Warnings = append(b.warns, b.names.warns...)
	m.RequestSchemas = b.req.list
	m.RouteGroups = b.routes
	return m, nil
}

// newModel builds the model Generate renders and Load returns, complete:
// the spec's operations and types (buildModel), the base path (with its
// warnings first), the version and the client settings. Nothing changes it
// afterwards; emitters only read it.
func newModel(doc *openapi3.T, cfg *Config) (*Model, error) {
	m, err := buildModel(doc, cfg, sourcePath(cfg))
	if err != nil {
		return nil, err
	}
	base, bw, err := resolveBasePath(cfg, doc)
	if err != nil {
		return nil, err
	}
	m.BasePath, m.Version, m.Client = base, cfg.Version, ClientModel{Enabled: cfg.Client.Enabled}
	m.Warnings = append(bw, m.Warnings...)
	return m, nil
}

// newType registers the named type generated for schema s.
func (b *builder) newType(s *openapi3.Schema, loc string) *Type {
	t := &Type{Location: loc, Doc: firstLine(s.Description), Kind: kindUndeclared}
	b.tb(t).schema = s
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
