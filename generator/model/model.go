// Package model is the model of an OpenAPI document annotated with
// x-idempotent that idemgen generates code from, and its builder.
//
// Build reads the document as kin-openapi loaded it and decides every
// name, order, type and policy: what a generated package declares is a
// Model, complete when Build returns, and nothing changes it afterwards.
// The model is data. It holds no kin-openapi types and prints no Go: the
// runtime's constants are held as their own typed values (idemimpl.Style,
// idemimpl.Decoding, idemimpl.SchemeKind, ...), Go types as GoType, and
// the emitters (generator/internal/emit) spell them. What the builder keeps
// while it builds lives in its side tables, not in the model.
//
// Templates receive *Model; templates/README.md documents the data they
// reach, as public API.
package model

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// Model is everything the renderers need, decided once: names, order, types
// and policies. Templates receive *Model (see templates/README.md).
type Model struct {
	Package  string // Go package name
	Version  string // idemgen version in the file headers; "(devel)" when not a release
	Source   string // the spec as the config names it, else as given (Options.Source), slash-separated
	BasePath string // prefix of every route pattern: the config's basePath, else the path of the spec's first server ("" for none)
	// Profile is the profile of the refusals that precede any operation
	// (404 and 405 under BasePath): the document root's x-idempotent
	// profile, as for the operations outside the engine.
	Profile string
	Types   []*Type // every named type, sorted by name
	// RequestSchemas is the table of request schema descriptors the
	// generated decoders validate against (idemimpl.Schemas).
	RequestSchemas []*ReqSchema
	Operations     []*Operation // sorted by path, then method
	// SharedResponses are the response components several operations
	// answer with (Response.Shared), sorted by name.
	SharedResponses []*SharedResponse
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
	Client ClientModel
	// Split, when the config asks for it (Options.Split), holds the import
	// paths of the internal packages the types and Unimplemented are
	// declared in; nil when they are declared in the package itself.
	Split    *SplitModel
	Warnings []diag.Warning
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
	// (or nullable and required), idemtype.Nullable[T] when optional and
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
	GoDate     // idemtype.Date
	GoNullable // idemtype.Nullable[Elem]
	GoOrEmpty  // idemtype.OrEmpty[Elem]
	GoReader   // io.Reader: a binary request body, read as a stream
	GoFile     // idemtype.File: a file part of a multipart/form-data body
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

// ReachesWriteOnly reports whether a value of t may hold a writeOnly member
// (Type.WriteOnly), which responses leave out.
func (t GoType) ReachesWriteOnly() bool {
	switch t.Kind {
	case GoNamed:
		return t.Named.WriteOnly
	case GoSlice, GoMap, GoPointer, GoNullable, GoOrEmpty:
		return t.Elem.ReachesWriteOnly()
	}
	return false
}

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

	// Profile is the x-idempotent profile the operation's refusals follow
	// (statuses, retry signals, error body): its policy's, or the document
	// root's for an operation outside the engine.
	Profile string

	// RequestTypeName and ResponseTypeName are GoName+"Request" and
	// GoName+"Response" unless a schema of the same name took them first.
	RequestTypeName, ResponseTypeName string
	// Names are the generated code's own names for the operation.
	Names OperationNames
	// ResponsesOf is the operation whose responses this one has, when both
	// answer with the same shared response components under the same
	// statuses, in the same order (nothing but a spec's common responses):
	// the first such operation in Operations. Its response interface is then
	// an alias of that one's (ResponseTypeName names the alias), and it
	// calls that one's encoder (Names.Encoder and Names.Marker are that
	// one's). nil: the operation declares its own.
	ResponsesOf *Operation
	// ResponsesFor are the other operations whose ResponsesOf is this one.
	ResponsesFor []*Operation
}

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
	// Style is its serialisation (idemimpl.StyleForm,
	// idemimpl.StyleDeepObject, ...; idemimpl.StyleJSON for content:
	// application/json), and Explode its explode.
	Style   idemimpl.Style
	Explode bool
	Schema  int // index in Model.RequestSchemas
	// Fingerprint is whether the parameter is part of the idempotency
	// fingerprint: every parameter but the idempotency key header and those
	// x-idempotent.fingerprint.excludeParameters names.
	Fingerprint bool
	// EngineKey is whether the parameter is the operation's idempotency key
	// header, which the engine parses (idem.ParseKey, x-idempotent.keyFormat)
	// before the decoder runs: the decoder leaves it alone and the handler's
	// field is set from the engine's parsed key (idem.KeyFromContext), so a
	// handler sees one form of the key. The client sends it as the key.
	EngineKey bool
	// KeyChecked is whether the engine checks its parsed key against the
	// schema of this EngineKey parameter (idem.Operation.CheckKey, built by
	// idemimpl.KeyCheck from the parameter's idemimpl.Param): the schema
	// declares a pattern, an enum, a length or a format the key format does
	// not imply, or the parameter is required while the policy's key is
	// optional. The check runs before the body is read; a violation is the
	// 400 the decoder would answer, naming the header, and leaves no record.
	KeyChecked bool
}

// DecodedParams are the parameters the decoder reads and validates: all but
// the one the engine fills (Param.EngineKey). The idemimpl.Param table of
// the operation (ParamsVar) lists these, in this order.
func (o *Operation) DecodedParams() []*Param {
	var out []*Param
	for _, p := range o.Params {
		if !p.EngineKey {
			out = append(out, p)
		}
	}
	return out
}

// FieldType is the Go type of the parameter's field in the request type:
// a slice of Type for a list, a pointer to it when the parameter is
// optional and its zero value would be a value (not a nil-able type).
func (p *Param) FieldType() GoType {
	t := p.Type
	switch {
	case p.List:
		return GoType{Kind: GoSlice, Elem: &t}
	case !p.Required && !t.nilable():
		return ptr(t)
	}
	return t
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
	// ContentEncoding: the operation declares a Content-Encoding header
	// parameter, so the body is taken in any content coding
	// (idemimpl.Body.ContentEncoding); otherwise one other than identity
	// is refused with 415.
	ContentEncoding bool
}

// Streamed reports whether the operation's body is read as a stream
// (idem.Engine.ServeStream, idemimpl.Request.BodyStream).
func (o *Operation) Streamed() bool { return o.Body != nil && o.Body.Stream }

// BodyMedia is one media type a request body is accepted in.
type BodyMedia struct {
	Type       string            // as declared, lower-cased
	Decode     idemimpl.Decoding // how it is read: idemimpl.AsJSON, AsMergePatch, AsForm, AsBytes, AsMultipart, AsBinary
	Schema     int               // index in the request schema table
	Unexploded []string          // form members with explode: false
	JSONParts  []string          // multipart members whose parts hold JSON
	FormParts  []string          // multipart members whose part holds a form
}

// SecurityScheme is a security scheme that some operation requires: a
// method of the generated Security interface, called with the credential
// the scheme finds in a request.
type SecurityScheme struct {
	Name        string // as in components.securitySchemes
	Method      string // Go method of Security
	Description string // first line of the scheme's description
	// Kind is where the credential is: idemimpl.SchemeAPIKeyHeader,
	// SchemeAPIKeyQuery, SchemeAPIKeyCookie, SchemeBearer (HTTP bearer,
	// OAuth2, OpenID Connect), SchemeBasic, SchemeHTTP (another HTTP
	// authentication scheme), SchemeMutualTLS, or SchemeUndefined for a
	// name that requirements use and components do not define (it never
	// authenticates anything, and has no method).
	Kind idemimpl.SchemeKind
	// Param is the API key's header, query parameter or cookie name, or
	// the HTTP authentication scheme of SchemeHTTP.
	Param string
	// Challenge is the WWW-Authenticate challenge of a 401.
	Challenge string
	// What says in words where the credential is, for comments:
	// "API key in header X-API-Key", "HTTP bearer token".
	What  string
	Index int // in Model.SecuritySchemes
}

// Defined reports whether the spec defines the scheme (it has a method).
func (s *SecurityScheme) Defined() bool { return s.Kind != idemimpl.SchemeUndefined }

// SecurityUse is one scheme of a requirement, with the scopes (or, in
// OpenAPI 3.1, roles) the operation requires of it.
type SecurityUse struct {
	Scheme *SecurityScheme
	Scopes []string
}

// SecurityRequirement is one alternative of an operation's security: all
// of its schemes must authenticate the request. Empty: anonymous requests
// are allowed.
type SecurityRequirement []SecurityUse

// Secured reports whether some operation requires security: the server
// then has a Security interface, WithSecurity and Principal.
func (m *Model) Secured() bool { return len(m.SecuritySchemes) > 0 }

// X509 reports whether a Security method takes a certificate chain.
func (m *Model) X509() bool {
	for _, s := range m.SecuritySchemes {
		if s.Kind == idemimpl.SchemeMutualTLS {
			return true
		}
	}
	return false
}

// DefinedSecuritySchemes are the schemes with a Security method.
func (m *Model) DefinedSecuritySchemes() []*SecurityScheme {
	var out []*SecurityScheme
	for _, s := range m.SecuritySchemes {
		if s.Defined() {
			out = append(out, s)
		}
	}
	return out
}

// SecuredIdempotentOperations are the ids of the idempotent operations that
// require security (some alternative names a scheme): their keys should be
// scoped by principal, and NewHandler warns when the engine does not.
func (m *Model) SecuredIdempotentOperations() []string {
	var out []string
	for _, o := range m.Operations {
		if !o.Idempotent {
			continue
		}
		for _, alt := range o.Security {
			if len(alt) > 0 {
				out = append(out, o.ID)
				break
			}
		}
	}
	return out
}

// Webhook is one entry of an OpenAPI 3.1 document's `webhooks` map: a
// request the API sends to its subscribers. The generator emits a typed
// sender that enqueues it through the outbox and a typed receiver that runs
// it through the inbox (webhooks.gen.go).
type Webhook struct {
	Name       string // key in the webhooks map, e.g. "email.sent"; also the CloudEvents type
	GoName     string // exported name: EmailSent
	Method     string // the spec's method (POST); deliveries are always POSTed
	Summary    string
	Deprecated bool
	Segment    string // path segment of the receiver route: the name, path-escaped
	MediaType  string // the payload's media type (JSON)
	Payload    GoType // Go type of the request body
	Required   bool   // the spec requires a body
	// Security lists the security schemes the webhook itself declares
	// (sorted); the document's root security never applies to webhooks.
	Security []string
	Location string // JSON pointer, e.g. #/webhooks/email.sent/post

	// SenderName and TypeConstName are Send<GoName> and
	// WebhookType<GoName> unless a schema of the same name took them first.
	SenderName, TypeConstName string
	// HandlerName is handleWebhook<GoName>, the method of the receiver's
	// handler.
	HandlerName string
}

// Sender, TypeConst, Handler name the webhook's Go identifiers.
func (w *Webhook) Sender() string { return w.SenderName }

func (w *Webhook) TypeConst() string { return w.TypeConstName }

func (w *Webhook) Handler() string { return w.HandlerName }

// ReqSchema is one entry of the generated package's idemimpl.Schemas table:
// the compact descriptor of a request body or parameter schema that the
// generated decoders validate against. Every schema has one entry (one per
// named schema, shared by all its uses; a second when a config turns
// validation off below it), so recursive schemas cost one entry each.
type ReqSchema struct {
	Index int
	// Source is the spec location the entry was built from.
	Source string

	// The keywords, each the field of idemimpl.Schema of the same name.
	Types                              []idemimpl.Types // one type each, in the spec's order: idemimpl.TypeString, idemimpl.TypeNull
	Nullable                           bool
	Format                             idemimpl.Format // idemimpl.FormatNone for none
	Enum                               []string        // canonical JSON of the allowed values
	Has                                idemimpl.Has    // the limits set: idemimpl.HasMinimum|...
	Minimum, Maximum                   string          // exact decimals
	ExclusiveMinimum, ExclusiveMaximum bool
	MultipleOf                         string
	MinLength, MaxLength               uint64 // set when Has says so
	Pattern                            string
	MinItems, MaxItems                 uint64
	UniqueItems                        bool
	MinProperties, MaxProperties       uint64
	Items                              int // index; 0: any
	Props                              []ReqProp
	// AdditionalProperties is the index of the schema of undeclared
	// members, idemimpl.NoAdditional or idemimpl.AnyAdditional, or 0.
	AdditionalProperties int
	AllOf, AnyOf, OneOf  []int
	Discriminator        string
	Mapping              []ReqMapping
	Not                  int
	Default              string // canonical JSON; "" for none
	ReadOnly, NoValidate bool
}

// ReqProp is one declared property of a ReqSchema (idemimpl.Prop).
type ReqProp struct {
	Name     string
	Schema   int
	Required bool
}

// ReqMapping is a discriminator value and the schema it selects
// (idemimpl.Mapping).
type ReqMapping struct {
	Value  string
	Schema int
}

// key is the entry's keywords, for sharing entries of the same keywords.
func (e ReqSchema) key() string {
	e.Index, e.Source = 0, ""
	return fmt.Sprintf("%+v", e)
}
