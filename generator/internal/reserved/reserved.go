// Package reserved is the one table of the names idemgen declares itself in
// generated code, which the model's namer keeps from the spec's names and
// the emitters' importer from import names.
package reserved

// Scope names a namespace of the generated code in which idemgen
// declares names of its own.
type Scope int

const (
	// Package: package-level names of server.go.tmpl and
	// types.gen.go, always declared.
	Package Scope = iota
	// Secured: package-level names of a server some operation of
	// which requires security.
	Secured
	// Webhooks: package-level names of webhooks.gen.go (a spec
	// with webhooks).
	Webhooks
	// Client: package-level names of client.gen.go when it is
	// generated into the server's package.
	Client
	// TypeMembers: methods of every generated struct and union;
	// no field takes their names.
	TypeMembers
	// SplitTypeMembers: methods of the structs and unions with
	// writeOnly members when the types are split into packages of their
	// own (Config.Split), where the encoders call them from another package.
	SplitTypeMembers
	// RequestFields, ResponseFields: fields idemgen gives
	// every request and response type.
	RequestFields
	ResponseFields
	// HandlerMethods: methods of the server's handler type beside
	// the operations' handle<Op> and route<Op>.
	HandlerMethods
	// ResponseMarkers: names the operations' is<Op>Response
	// marker methods must not take (none yet).
	ResponseMarkers
	// TemplateLocals: the names the default templates give their
	// own variables and unexported declarations: no import takes them
	// (see importer).
	TemplateLocals
)

// Names is the one table of the names idemgen declares itself in
// generated code, by scope. The namer reserves them before any name from
// the spec is resolved, so a schema, property or operation of the same name
// is renamed with a warning, never silently shadowed; the importer gives no
// import a name of TemplateLocals. A template or renderer that
// declares a new name adds it here (TestReservedNamesDeclared holds the
// table to the golden files).
var Names = map[Scope][]string{
	Package: {"Server", "Unimplemented", "NewHandler", "Option", "WithMiddleware",
		"WithErrorHook", "WithMaxBodyBytes", "DefaultMaxBodyBytes", "IdempotentOperations", "BasePath", "WithBasePath",
		"Route", "Routes",
		"options", "handler", "newHandler", "requestSchemas", "routeTable"},
	Secured: {"Security", "WithSecurity", "Principal", "securitySchemes", "securityRequirements"},
	Webhooks: {"WebhookReceiver", "UnimplementedWebhookReceiver", "NewWebhookHandler",
		"WebhookOption", "WebhookSource", "DefaultWebhookBasePath", "WithWebhookBasePath",
		"WithWebhookMaxBodyBytes", "WithWebhookVerifier", "WithWebhookErrorHook", "WithWebhookMiddleware",
		"webhookOptions", "webhookHandler", "errWebhookNotImplemented"},
	Client:           {"Client", "NewClient"},
	TypeMembers:      {"MarshalJSON", "UnmarshalJSON"},
	SplitTypeMembers: {"WithoutWriteOnly"},
	RequestFields:    {"Body"},
	ResponseFields:   {"Body", "Status"},
	HandlerMethods:   {"fail", "routes", "authenticate", "securityHook"},
	ResponseMarkers:  {},
	TemplateLocals: {"a", "b", "body", "c", "cfg", "ctx", "db", "engine", "err", "fn", "h", "handle", "hh",
		"i", "k", "mux", "o", "opt", "opts", "out", "p", "payload", "q", "r", "req", "res", "resp", "rt", "s", "t",
		"tx", "v", "w", "handler", "options", "rs", "serve", "routeTable",
		"webhookHandler", "webhookOptions", "ok", "sec", "securityHook", "securitySchemes"},
}

// TemplateIdents is TemplateLocals as a set.
var TemplateIdents = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range Names[TemplateLocals] {
		m[n] = true
	}
	return m
}()
