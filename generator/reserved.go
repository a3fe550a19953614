package generator

// reservedScope names a namespace of the generated code in which idemgen
// declares names of its own.
type reservedScope int

const (
	// reservedPackage: package-level names of server.go.tmpl and
	// types.gen.go, always declared.
	reservedPackage reservedScope = iota
	// reservedSecured: package-level names of a server some operation of
	// which requires security.
	reservedSecured
	// reservedWebhooks: package-level names of webhooks.gen.go (a spec
	// with webhooks).
	reservedWebhooks
	// reservedClient: package-level names of client.gen.go when it is
	// generated into the server's package.
	reservedClient
	// reservedTypeMembers: methods of every generated struct and union;
	// no field takes their names.
	reservedTypeMembers
	// reservedSplitTypeMembers: methods of the structs and unions with
	// writeOnly members when the types are split into packages of their
	// own (Config.Split), where the encoders call them from another package.
	reservedSplitTypeMembers
	// reservedRequestFields, reservedResponseFields: fields idemgen gives
	// every request and response type.
	reservedRequestFields
	reservedResponseFields
	// reservedHandlerMethods: methods of the server's handler type beside
	// the operations' handle<Op> and route<Op>.
	reservedHandlerMethods
	// reservedResponseMarkers: names the operations' is<Op>Response
	// marker methods must not take (none yet).
	reservedResponseMarkers
	// reservedTemplateLocals: the names the default templates give their
	// own variables and unexported declarations: no import takes them
	// (see importer).
	reservedTemplateLocals
)

// reservedNames is the one table of the names idemgen declares itself in
// generated code, by scope. The namer reserves them before any name from
// the spec is resolved, so a schema, property or operation of the same name
// is renamed with a warning, never silently shadowed; the importer gives no
// import a name of reservedTemplateLocals. A template or renderer that
// declares a new name adds it here (TestReservedNamesDeclared holds the
// table to the golden files).
var reservedNames = map[reservedScope][]string{
	reservedPackage: {"Server", "Unimplemented", "NewHandler", "Option", "WithMiddleware",
		"WithErrorHook", "WithMaxBodyBytes", "DefaultMaxBodyBytes", "IdempotentOperations", "BasePath", "WithBasePath",
		"Route", "Routes",
		"options", "handler", "newHandler", "requestSchemas", "routeTable"},
	reservedSecured: {"Security", "WithSecurity", "Principal", "securitySchemes", "securityRequirements"},
	reservedWebhooks: {"WebhookReceiver", "UnimplementedWebhookReceiver", "NewWebhookHandler",
		"WebhookOption", "WebhookSource", "DefaultWebhookBasePath", "WithWebhookBasePath",
		"WithWebhookMaxBodyBytes", "WithWebhookVerifier", "WithWebhookErrorHook", "WithWebhookMiddleware",
		"webhookOptions", "webhookHandler", "errWebhookNotImplemented"},
	reservedClient:           {"Client", "NewClient"},
	reservedTypeMembers:      {"MarshalJSON", "UnmarshalJSON"},
	reservedSplitTypeMembers: {"WithoutWriteOnly"},
	reservedRequestFields:    {"Body"},
	reservedResponseFields:   {"Body", "Status"},
	reservedHandlerMethods:   {"fail", "routes", "authenticate", "securityHook"},
	reservedResponseMarkers:  {},
	reservedTemplateLocals: {"a", "b", "body", "c", "cfg", "ctx", "db", "engine", "err", "fn", "h", "handle", "hh",
		"i", "k", "mux", "o", "opt", "opts", "out", "p", "payload", "q", "r", "req", "res", "resp", "rt", "s", "t",
		"tx", "v", "w", "handler", "options", "rs", "serve", "routeTable",
		"webhookHandler", "webhookOptions", "ok", "sec", "securityHook", "securitySchemes"},
}

// templateIdents is reservedTemplateLocals as a set.
var templateIdents = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range reservedNames[reservedTemplateLocals] {
		m[n] = true
	}
	return m
}()
