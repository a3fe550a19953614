package model

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/internal/reserved"
	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

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
			case idemimpl.SchemeAPIKeyHeader:
				if in == "header" && strings.EqualFold(name, s.Param) {
					return true
				}
			case idemimpl.SchemeAPIKeyQuery:
				if in == "query" && name == s.Param {
					return true
				}
			case idemimpl.SchemeAPIKeyCookie:
				if in == "cookie" && name == s.Param {
					return true
				}
			case idemimpl.SchemeBearer, idemimpl.SchemeBasic, idemimpl.SchemeHTTP:
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
		s.Kind, s.What = idemimpl.SchemeUndefined, "undefined"
		if why != "" {
			b.warnf(diag.WarnRefused, where, "security scheme %q %s: a requirement that names it never admits a request (401)", name, why)
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
			s.Kind, s.Param = idemimpl.SchemeAPIKeyHeader, http.CanonicalHeaderKey(ss.Name)
		case "query":
			s.Kind = idemimpl.SchemeAPIKeyQuery
		case "cookie":
			s.Kind = idemimpl.SchemeAPIKeyCookie
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
			s.Kind, s.Challenge, s.What = idemimpl.SchemeBearer, "Bearer", "HTTP bearer token"
		case "basic":
			s.Kind, s.What = idemimpl.SchemeBasic, "HTTP basic credentials"
			s.Challenge = `Basic realm="` + quotedString(b.realm()) + `", charset="UTF-8"`
		case "":
			undefined(fmt.Sprintf("(%s) has no scheme", loc))
			return s
		default:
			s.Kind, s.Param, s.What = idemimpl.SchemeHTTP, ss.Scheme, "HTTP "+ss.Scheme+" credentials"
		}
	case "oauth2":
		s.Kind, s.Challenge, s.What = idemimpl.SchemeBearer, "Bearer", "OAuth2 bearer token"
	case "openidconnect":
		s.Kind, s.Challenge, s.What = idemimpl.SchemeBearer, "Bearer", "OpenID Connect bearer token"
	case "mutualtls":
		s.Kind, s.What = idemimpl.SchemeMutualTLS, "TLS client certificate"
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
		k := fmt.Sprint(requirementKey(o.Security))
		i, ok := index[k]
		if !ok {
			i = len(m.SecurityRequirements)
			index[k] = i
			m.SecurityRequirements = append(m.SecurityRequirements, o.Security)
		}
		o.SecurityIndex = i
	}
	b.names.pkg.reserve(reserved.Names[reserved.Secured]...)
}

// requirementKey is what tells requirements apart: per alternative, per
// scheme, its index and scopes.
func requirementKey(alts []SecurityRequirement) [][][]string {
	out := make([][][]string, len(alts))
	for i, alt := range alts {
		for _, u := range alt {
			out[i] = append(out[i], append([]string{strconv.Itoa(u.Scheme.Index)}, u.Scopes...))
		}
	}
	return out
}
