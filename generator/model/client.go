package model

import (
	"strings"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// ClientModel is what the client template needs beyond the operations.
type ClientModel struct {
	// Enabled: the config asks for a client.
	Enabled bool
	// TypesImport is the import path of the package holding the request and
	// response types when the client has a package of its own; "" when the
	// client is generated into that package.
	TypesImport string
}

// PathPart is a literal piece of an operation's path or a path parameter.
type PathPart struct {
	Literal string
	Param   *Param
}

// PathParts splits the operation's path (prefixed by basePath) into
// literals and path parameters, in order: what a client concatenates.
func (o *Operation) PathParts(basePath string) []PathPart {
	byName := map[string]*Param{}
	for _, p := range o.Params {
		if p.In == "path" {
			byName[p.Name] = p
		}
	}
	var parts []PathPart
	lit := basePath
	rest := o.Path
	for {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			break
		}
		p := byName[rest[i+1:j]]
		if p == nil { // undeclared: the model refused it already
			break
		}
		lit += rest[:i]
		if lit != "" {
			parts = append(parts, PathPart{Literal: lit})
		}
		parts = append(parts, PathPart{Param: p})
		lit, rest = "", rest[j+1:]
	}
	if lit+rest != "" {
		parts = append(parts, PathPart{Literal: lit + rest})
	}
	return parts
}

// KeyParam is the header parameter that carries the operation's
// idempotency key, when the spec declares the key header as a parameter;
// nil otherwise.
func (o *Operation) KeyParam() *Param {
	if !o.Idempotent {
		return nil
	}
	for _, p := range o.Params {
		if p.In == "header" && !p.List && strings.EqualFold(p.Name, o.Policy.Header) {
			return p
		}
	}
	return nil
}

// ClientParams are the parameters a client sends itself: all but KeyParam.
func (o *Operation) ClientParams() []*Param {
	key := o.KeyParam()
	var out []*Param
	for _, p := range o.Params {
		if p != key {
			out = append(out, p)
		}
	}
	return out
}

// ObjectEncoder is the idemclient function with which the client writes a
// parameter whose value is not a scalar nor a list of scalars:
// QueryDeepObject (style deepObject), QueryFormObject, HeaderObject and
// CookieObject (a query parameter of style form, a header, a cookie,
// typed as a map, a struct, a union or any value; they take Explode),
// QueryJSON (a query parameter with content application/json); "" for the
// others, which Query, Header, Cookie and their Optional and List forms
// write.
func (p *Param) ObjectEncoder() string {
	object := !p.List && objectShaped(p.Type)
	switch {
	case p.In == "query" && p.Style == idemimpl.StyleDeepObject:
		return "QueryDeepObject"
	case p.In == "query" && p.Style == idemimpl.StyleJSON:
		return "QueryJSON"
	case p.In == "query" && p.Style == idemimpl.StyleForm && object:
		return "QueryFormObject"
	case p.In == "header" && p.Style == idemimpl.StyleSimple && object:
		return "HeaderObject"
	case p.In == "cookie" && p.Style == idemimpl.StyleForm && object:
		return "CookieObject"
	}
	return ""
}

// objectShaped reports whether a value of t may encode to a JSON object.
func objectShaped(t GoType) bool {
	switch t.Kind {
	case GoMap, GoAny:
		return true
	case GoPointer, GoNullable, GoOrEmpty:
		return objectShaped(*t.Elem)
	case GoNamed:
		switch t.Named.Kind {
		case KindStruct, KindUnion:
			return true
		case KindAlias:
			return objectShaped(t.Named.Alias)
		}
	}
	return false
}

// ClientOpVar and ClientReader name the client's identifiers of the
// operation: its idemclient.Operation variable and its response reader.
func (o *Operation) ClientOpVar() string  { return o.Names.ClientOp }
func (o *Operation) ClientReader() string { return o.Names.ClientReader }

// Optional reports whether the body may be left out: the client sends none
// when the field is nil.
func (b *Body) Optional() bool { return !b.Required && b.Type.nilable() }

// Class is the status class of a range response ("4XX" is 4); 0 for a
// single status and for default.
func (r *Response) Class() int {
	if len(r.Status) == 3 && (r.Status[1:] == "XX" || r.Status[1:] == "xx") && r.Status[0] >= '1' && r.Status[0] <= '5' {
		return int(r.Status[0] - '0')
	}
	return 0
}

// IsDefault reports whether r is the default response.
func (r *Response) IsDefault() bool { return r.Status == "default" }

// IsProblem reports whether the response's media type is
// application/problem+json.
func (r *Response) IsProblem() bool {
	return strings.EqualFold(r.MediaType, "application/problem+json")
}
