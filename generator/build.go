package generator

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
	// split: the types go to packages of their own (Config.Split).
	split bool
	// data is the document's text, for the lines of problems (locate);
	// opLocs the operations' locations by id.
	data   []byte
	opLocs map[string]string

	// fileParts is set while the schema of a multipart/form-data body is
	// typed: a binary string there is a file part (idemtype.File).
	fileParts bool
	parts     partTypes // multipart variants of named types (multipart.go)
}

func buildModel(doc *openapi3.T, cfg *Config, source string) (*Model, error) {
	file := specName(cfg)
	errs := &errList{}
	b := &builder{doc: doc, file: file, errs: errs, names: newNamer(file, cfg.Rename, errs),
		bySchema: map[*openapi3.Schema]*Type{}, typeState: map[*Type]*typeBuild{}, fieldState: map[*Field]*fieldBuild{}, opState: map[*Operation]*opBuild{}, byRef: map[string]*Type{}, copies: map[*openapi3.Schema]*refCopy{}, unions: map[string]*Type{}, versions: newVersioner(doc), rootProblems: map[string]bool{}, split: cfg.Split,
		data: cfg.SpecData, opLocs: map[string]string{}}
	b.names.pkg.reserve(reserved.Names[reserved.Package]...)
	switch {
	case cfg.Client.Enabled && cfg.Client.separate():
		b.clientPkg = b.names.scope("client package", reserved.Names[reserved.Client]...)
	case cfg.Client.Enabled:
		b.clientPkg = b.names.pkg
		b.names.pkg.reserve(reserved.Names[reserved.Client]...)
	}
	b.handlerMethods = b.names.scope("methods of handler", reserved.Names[reserved.HandlerMethods]...)
	b.markers = b.names.scope("response markers", reserved.Names[reserved.ResponseMarkers]...)
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

	m := &Model{Package: cfg.Package, Source: source}
	b.countResponseUses(doc)
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
	b.checkErrorBodies(m.Operations, root)
	m.Profile = root.apply(DefaultPolicy()).Profile
	b.finishSecurity(m)
	b.req.checkSkip(file)
	b.checkRootExclusions(root)
	m.Webhooks = b.webhooks(doc)
	m.WebhookSource = cfg.WebhookSource
	b.shareInline(m.Operations, m.Webhooks, cfg.Rename)
	b.names.resolve()
	if err := errs.err(); err != nil {
		return nil, b.locate(err.(*diag.SpecError))
	}
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
	if cfg.Split {
		m.Split = &SplitModel{SchemaTypes: cfg.ImportPath + "/" + schemaTypesDir, OpTypes: cfg.ImportPath + "/" + opTypesDir,
			Unimplemented: cfg.ImportPath + "/" + unimplementedDir}
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
