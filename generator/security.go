package generator

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemgen/idemgen/internal/jsonkit"
)

// SecurityScheme is a security scheme that some operation requires: a
// method of the generated Security interface, called with the credential
// the scheme finds in a request.
type SecurityScheme struct {
	Name        string // as in components.securitySchemes
	Method      string // Go method of Security
	Description string // first line of the scheme's description
	// Kind is the idemimpl.SchemeKind constant: SchemeAPIKeyHeader,
	// SchemeAPIKeyQuery, SchemeAPIKeyCookie, SchemeBearer (HTTP bearer,
	// OAuth2, OpenID Connect), SchemeBasic, SchemeHTTP (another HTTP
	// authentication scheme), SchemeMutualTLS, or SchemeUndefined for a
	// name that requirements use and components do not define (it never
	// authenticates anything, and has no method).
	Kind string
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
func (s *SecurityScheme) Defined() bool { return s.Kind != "SchemeUndefined" }

// Params is the parameter list of the scheme's Security method after ctx,
// and Args the arguments the generated hook passes from c, an
// *idemimpl.Credential.
func (s *SecurityScheme) Params() string {
	switch s.Kind {
	case "SchemeBasic":
		return "username, password string"
	case "SchemeMutualTLS":
		return "chain []*x509.Certificate"
	case "SchemeBearer":
		return "token string"
	case "SchemeHTTP":
		return "credentials string"
	}
	return "key string"
}

// Args: see Params.
func (s *SecurityScheme) Args() string {
	switch s.Kind {
	case "SchemeBasic":
		return "c.Username, c.Password"
	case "SchemeMutualTLS":
		return "c.Certificates"
	}
	return "c.Value"
}

// Literal renders the scheme as an idemimpl.Scheme literal.
func (s *SecurityScheme) Literal() string {
	out := fmt.Sprintf("{Name: %s, Kind: idemimpl.%s", strconv.Quote(s.Name), s.Kind)
	if s.Param != "" {
		out += ", Param: " + strconv.Quote(s.Param)
	}
	if s.Challenge != "" {
		out += ", Challenge: " + strconv.Quote(s.Challenge)
	}
	return out + "}"
}

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

// Literal renders the requirement as an idemimpl.Requirement literal.
func (r SecurityRequirement) Literal() string {
	parts := make([]string, len(r))
	for i, u := range r {
		p := fmt.Sprintf("{Scheme: &securitySchemes[%d]", u.Scheme.Index)
		if len(u.Scopes) > 0 {
			q := make([]string, len(u.Scopes))
			for j, s := range u.Scopes {
				q[j] = strconv.Quote(s)
			}
			p += ", Scopes: []string{" + strings.Join(q, ", ") + "}"
		}
		parts[i] = p + "}"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// SecurityVar is the operation's []idemimpl.Requirement: an entry of
// securityRequirements, the distinct requirements of all operations
// (Model.SecurityRequirements).
func (o *Operation) SecurityVar() string {
	return "securityRequirements[" + strconv.Itoa(o.SecurityIndex) + "]"
}

// Secured reports whether some operation requires security: the server
// then has a Security interface, WithSecurity and Principal.
func (m *Model) Secured() bool { return len(m.SecuritySchemes) > 0 }

// X509 reports whether a Security method takes a certificate chain.
func (m *Model) X509() bool {
	for _, s := range m.SecuritySchemes {
		if s.Kind == "SchemeMutualTLS" {
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

// securityPkgNames are the package-level identifiers of a secured server.
var securityPkgNames = []string{"Security", "WithSecurity", "Principal"}

// security resolves the operation's security requirements: its own
// `security`, else the document's. `security: []` requires nothing; an
// empty requirement `{}` allows anonymous requests. Schemes are looked up
// (and created on first use) in b.schemes; the schemes of a requirement are
// in name order, since a requirement is a map.
func (b *builder) security(o *Operation, op *openapi3.Operation) {
	reqs := b.doc.Security
	where := "#/security"
	if op.Security != nil {
		reqs, where = *op.Security, o.Location+"/security"
	}
	for i, req := range reqs {
		alt := SecurityRequirement{}
		for _, name := range sortedKeys(req) {
			s := b.scheme(name, fmt.Sprintf("%s/%d/%s", where, i, jsonkit.EscapeToken(name)))
			alt = append(alt, SecurityUse{Scheme: s, Scopes: req[name]})
		}
		o.Security = append(o.Security, alt)
	}
	for _, alt := range o.Security {
		if len(alt) > 0 {
			return
		}
	}
	o.Security = nil // nothing but anonymous alternatives: nothing to check
}

// credentialParam reports whether a parameter carries a credential of one
// of the operation's schemes: such a parameter is left out of the
// idempotency fingerprint (the principal scopes the key instead).
func (o *Operation) credentialParam(in, name string) bool {
	for _, alt := range o.Security {
		for _, u := range alt {
			s := u.Scheme
			switch s.Kind {
			case "SchemeAPIKeyHeader":
				if in == "header" && strings.EqualFold(name, s.Param) {
					return true
				}
			case "SchemeAPIKeyQuery":
				if in == "query" && name == s.Param {
					return true
				}
			case "SchemeAPIKeyCookie":
				if in == "cookie" && name == s.Param {
					return true
				}
			case "SchemeBearer", "SchemeBasic", "SchemeHTTP":
				if in == "header" && strings.EqualFold(name, "Authorization") {
					return true
				}
			}
		}
	}
	return false
}

// scheme returns the model of the security scheme called name, built on
// first use; where is the requirement that uses it, for warnings.
func (b *builder) scheme(name, where string) *SecurityScheme {
	if s, ok := b.schemes[name]; ok {
		return s
	}
	s := &SecurityScheme{Name: name}
	b.schemes[name] = s
	var ss *openapi3.SecurityScheme
	if c := b.doc.Components; c != nil {
		if r := c.SecuritySchemes[name]; r != nil {
			ss = r.Value
		}
	}
	loc := "#/components/securitySchemes/" + jsonkit.EscapeToken(name)
	undefined := func(why string) {
		s.Kind, s.What = "SchemeUndefined", "undefined"
		if why != "" {
			b.warnf(where, "security scheme %q %s: a requirement that names it never admits a request (401)", name, why)
		}
	}
	if ss == nil {
		undefined("") // specWarnings names it
		return s
	}
	s.Description = firstLine(ss.Description)
	switch strings.ToLower(ss.Type) {
	case "apikey":
		s.Param = ss.Name
		switch ss.In {
		case "header":
			s.Kind, s.Param = "SchemeAPIKeyHeader", http.CanonicalHeaderKey(ss.Name)
		case "query":
			s.Kind = "SchemeAPIKeyQuery"
		case "cookie":
			s.Kind = "SchemeAPIKeyCookie"
		default:
			s.Param = ""
			undefined(fmt.Sprintf("(%s) has in: %q, not header, query or cookie", loc, ss.In))
			return s
		}
		if s.Param == "" {
			undefined(fmt.Sprintf("(%s) has no name", loc))
			return s
		}
		s.What = "API key in " + ss.In + " " + ss.Name
	case "http":
		switch sch := strings.ToLower(ss.Scheme); sch {
		case "bearer":
			s.Kind, s.Challenge, s.What = "SchemeBearer", "Bearer", "HTTP bearer token"
		case "basic":
			s.Kind, s.What = "SchemeBasic", "HTTP basic credentials"
			s.Challenge = `Basic realm="` + quotedString(b.realm()) + `", charset="UTF-8"`
		case "":
			undefined(fmt.Sprintf("(%s) has no scheme", loc))
			return s
		default:
			s.Kind, s.Param, s.What = "SchemeHTTP", ss.Scheme, "HTTP "+ss.Scheme+" credentials"
		}
	case "oauth2":
		s.Kind, s.Challenge, s.What = "SchemeBearer", "Bearer", "OAuth2 bearer token"
	case "openidconnect":
		s.Kind, s.Challenge, s.What = "SchemeBearer", "Bearer", "OpenID Connect bearer token"
	case "mutualtls":
		s.Kind, s.What = "SchemeMutualTLS", "TLS client certificate"
	default:
		undefined(fmt.Sprintf("(%s) has type %q, which idemgen does not know", loc, ss.Type))
		return s
	}
	want := goName(name)
	b.names.fixed(b.secMethods, &s.Method, want, loc, "security scheme", rankComponent, closeness(name, want), true)
	return s
}

// realm is the realm of a Basic challenge: the API's title.
func (b *builder) realm() string {
	if b.doc.Info != nil && b.doc.Info.Title != "" {
		return b.doc.Info.Title
	}
	return "api"
}

// quotedString escapes s for an HTTP quoted-string, dropping control
// characters.
func quotedString(s string) string {
	var out strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out.WriteByte('\\')
			out.WriteRune(r)
		case r < 0x20 || r == 0x7f:
		default:
			out.WriteRune(r)
		}
	}
	return out.String()
}

// finishSecurity lists the schemes operations use, in name order, and the
// distinct requirements, in the order of the first operation using each,
// and reserves the names of a secured server.
func (b *builder) finishSecurity(m *Model) {
	if len(b.schemes) == 0 {
		return
	}
	for _, name := range sortedKeys(b.schemes) {
		s := b.schemes[name]
		s.Index = len(m.SecuritySchemes)
		m.SecuritySchemes = append(m.SecuritySchemes, s)
	}
	index := map[string]int{}
	for _, o := range m.Operations {
		if o.Security == nil {
			continue
		}
		lits := make([]string, len(o.Security))
		for i, alt := range o.Security {
			lits[i] = alt.Literal()
		}
		k := strings.Join(lits, ",")
		i, ok := index[k]
		if !ok {
			i = len(m.SecurityRequirements)
			index[k] = i
			m.SecurityRequirements = append(m.SecurityRequirements, o.Security)
		}
		o.SecurityIndex = i
	}
	b.names.pkg.reserve(securityPkgNames...)
}

// describeSecurity says alternatives in words: "apiKey and bearerAuth, or
// basicAuth, or anonymous".
func describeSecurity(alts []SecurityRequirement) string {
	words := make([]string, len(alts))
	for i, alt := range alts {
		if len(alt) == 0 {
			words[i] = "anonymous"
			continue
		}
		names := make([]string, len(alt))
		for j, u := range alt {
			names[j] = u.Scheme.Name
			if len(u.Scopes) > 0 {
				names[j] += " (" + strings.Join(u.Scopes, " ") + ")"
			}
		}
		words[i] = strings.Join(names, " and ")
	}
	return strings.Join(words, ", or ")
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
