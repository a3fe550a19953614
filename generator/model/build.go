package model

// The builder: it reads the loaded document (kin-openapi's types) and
// builds the Model, deciding every name, order and validation. What it
// keeps while it builds (the schema a type comes from, identifiers, scopes)
// lives here, in side tables, not in the model.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/reserved"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

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
	// copies are the OpenAPI 3.1 $refs with sibling keywords, by their
	// values (refsiblings.go); nil for a value that is no copy.
	copies   map[*openapi3.Schema]*refCopy
	unions   map[string]*Type // unions of named or scalar members, by members
	defaults []*Field         // fields whose Default.Type is set once types are shared
	warns    []diag.Warning
	// responseUses counts the operations answering with each response
	// component (responseKey); sharedResponses are the types of those
	// several answer with, by key, sharedList in the order declared.
	responseUses    map[string]int
	sharedResponses map[string]*SharedResponse
	sharedList      []*SharedResponse
	versions        *versioner
	methods         *scope // of Server
	// handlerMethods are the methods of the generated handler type,
	// markers the operations' is<Op>Response marker methods.
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
	// split: the types go to packages of their own (Options.Split).
	split bool
	// requireIdempotent: Options.RequireIdempotent.
	requireIdempotent bool
	// data is the document's text, for the lines of problems (locate);
	// opLocs the operations' locations by id.
	data   []byte
	opLocs map[string]string

	// fileParts is set while the schema of a multipart/form-data body is
	// typed: a binary string there is a file part (idemtype.File).
	fileParts bool
	parts     partTypes // multipart variants of named types (multipart.go)
}

// Options are what the builder is told beside the document: how the
// spec and the generated package are named, and the choices a config
// makes (generator.Config).
type Options struct {
	// File is the spec's file name, which messages start with
	// ("openapi.yaml"); Data its text, for the lines of messages (nil:
	// problems are not located).
	File string
	Data []byte
	// Source names the spec in generated files (Model.Source).
	Source string
	// Package and Version are Model.Package and Model.Version.
	Package, Version string
	// BasePath is the prefix of every route the config sets ("" or "/"
	// for none); nil: the path of the spec's first server.
	BasePath *string
	// RequireIdempotent makes an operation's `x-idempotent: false` on a
	// POST or PATCH an error instead of an opt-out.
	RequireIdempotent bool
	// Rename sets Go names by spec location (generator.Config.Rename).
	Rename map[string]Rename
	// SkipValidation lists the operationIds and schema locations whose
	// requests are not validated (generator.ValidationConfig.Skip).
	SkipValidation []string
	// WebhookSource is Model.WebhookSource.
	WebhookSource string
	// Client asks for a client, ClientPackage in a package of its own.
	Client, ClientPackage bool
	// Split puts the types in packages of their own below ImportPath, the
	// import path of the generated package (Model.Split).
	Split      bool
	ImportPath string
}

// modelRename is the Go name chosen for what is generated at one spec
// location (generator.Rename): Name for the member the location declares
// (or the type, where it declares only a type), Type for the type of an
// inline schema there.
type Rename struct{ Name, Type string }

func buildModel(doc *openapi3.T, opts *Options) (*Model, error) {
	file := opts.File
	errs := &errList{}
	b := &builder{doc: doc, file: file, errs: errs, names: newNamer(file, opts.Rename, errs),
		bySchema: map[*openapi3.Schema]*Type{}, typeState: map[*Type]*typeBuild{}, fieldState: map[*Field]*fieldBuild{}, opState: map[*Operation]*opBuild{}, byRef: map[string]*Type{}, copies: map[*openapi3.Schema]*refCopy{}, unions: map[string]*Type{}, versions: newVersioner(doc), rootProblems: map[string]bool{}, split: opts.Split,
		data: opts.Data, opLocs: map[string]string{}, requireIdempotent: opts.RequireIdempotent}
	b.names.pkg.reserve(reserved.Names[reserved.Package]...)
	switch {
	case opts.Client && opts.ClientPackage:
		b.clientPkg = b.names.scope("client package", reserved.Names[reserved.Client]...)
	case opts.Client:
		b.clientPkg = b.names.pkg
		b.names.pkg.reserve(reserved.Names[reserved.Client]...)
	}
	b.handlerMethods = b.names.scope("methods of handler", reserved.Names[reserved.HandlerMethods]...)
	b.markers = b.names.scope("response markers", reserved.Names[reserved.ResponseMarkers]...)
	b.methods = b.names.scope("methods of Server")
	b.schemes, b.secMethods = map[string]*SecurityScheme{}, b.names.scope("methods of Security")
	b.req = newReqTable(b, opts.SkipValidation)
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
			loc := "#/components/schemas/" + jsonkit.EscapeToken(name)
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

	b.rootExtensions(doc)
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

	m := &Model{Package: opts.Package, Source: opts.Source}
	b.countResponseUses(doc)
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		for _, method := range sortedKeys(ops) {
			if op := b.operation(path, method, item, ops[method], root); op != nil {
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
	b.checkErrorBodies(m.Operations, root)
	m.Profile = root.apply(DefaultPolicy()).Profile
	b.finishSecurity(m)
	b.req.checkSkip(file)
	b.checkRootExclusions(root)
	m.Webhooks = b.webhooks(doc)
	m.WebhookSource = opts.WebhookSource
	b.shareInline(m.Operations, m.Webhooks, opts.Rename)
	b.names.resolve()
	if err := errs.err(); err != nil {
		return nil, b.locate(err.(*diag.SpecError))
	}
	shareResponses(m.Operations)
	b.typeDefaults()
	markWriteOnly(b.types)
	m.Types = b.types
	sort.Slice(m.Types, func(i, j int) bool { return m.Types[i].Name < m.Types[j].Name })
	m.SharedResponses = b.sharedList
	sort.Slice(m.SharedResponses, func(i, j int) bool { return m.SharedResponses[i].TypeName < m.SharedResponses[j].TypeName })
	m.Warnings = append(b.warns, b.names.warns...)
	m.RequestSchemas = b.req.list
	m.RouteGroups = b.routes
	return m, nil
}

// Build builds the model of doc, complete: the spec's operations and
// types, the base path (with its warnings first), the version and the
// client settings. Nothing changes it afterwards; emitters only read it. A
// spec with errors yields a *diag.SpecError listing all of them.
func Build(doc *openapi3.T, opts Options) (*Model, error) {
	m, err := buildModel(doc, &opts)
	if err != nil {
		return nil, err
	}
	base, bw, err := resolveBasePath(&opts, doc)
	if err != nil {
		return nil, err
	}
	m.BasePath, m.Version, m.Client = base, opts.Version, ClientModel{Enabled: opts.Client}
	if opts.Split {
		m.Split = &SplitModel{SchemaTypes: opts.ImportPath + "/" + SchemaTypesDir, OpTypes: opts.ImportPath + "/" + OpTypesDir,
			Unimplemented: opts.ImportPath + "/" + UnimplementedDir}
	}
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
func (b *builder) warnf(kind diag.WarningKind, where, format string, args ...any) {
	where = strings.TrimSuffix(strings.TrimPrefix(where, b.file+": "), ": ")
	b.warns = append(b.warns, diag.Warning{Where: b.file + ": " + where, Message: fmt.Sprintf(format, args...), Kind: kind})
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
