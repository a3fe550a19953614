package idemimpl

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// SchemeKind is where a security scheme finds its credential.
type SchemeKind uint8

const (
	// SchemeUndefined is a scheme a requirement names but the spec does not
	// define: it never finds a credential, so its requirement never holds.
	SchemeUndefined SchemeKind = iota
	SchemeAPIKeyHeader
	SchemeAPIKeyQuery
	SchemeAPIKeyCookie
	// SchemeBearer reads `Authorization: Bearer <token>`: HTTP bearer,
	// OAuth2 and OpenID Connect.
	SchemeBearer
	// SchemeBasic reads `Authorization: Basic <base64(user:password)>`.
	SchemeBasic
	// SchemeHTTP reads `Authorization: <Param> <credentials>` for another
	// HTTP authentication scheme.
	SchemeHTTP
	// SchemeMutualTLS reads the client's TLS certificate chain.
	SchemeMutualTLS
)

// Scheme is one security scheme of the spec.
type Scheme struct {
	Name string // as in components.securitySchemes
	Kind SchemeKind
	// Param is the header, query parameter or cookie of an API key, or the
	// authentication scheme of SchemeHTTP.
	Param string
	// Challenge is the WWW-Authenticate challenge a 401 carries for this
	// scheme ("Bearer", `Basic realm="Payments", charset="UTF-8"`); "" for
	// none (API keys).
	Challenge string
}

// Use is one scheme of a requirement and the scopes (OAuth2, OpenID
// Connect) or roles (OpenAPI 3.1, any scheme) the operation requires of it.
type Use struct {
	Scheme *Scheme
	Scopes []string
}

// Requirement is one alternative of an operation's security: every scheme
// in it must authenticate the request. An empty Requirement admits a request
// that carries no credentials (optional authentication).
type Requirement []Use

// Credential is what a scheme found in a request.
type Credential struct {
	// Value is the API key, the bearer token, or the credentials of another
	// HTTP authentication scheme.
	Value string
	// Username and Password are HTTP basic's.
	Username, Password string
	// Certificates is the client's TLS certificate chain, leaf first.
	Certificates []*x509.Certificate
}

// HookFunc calls the service's hook for scheme s.
type HookFunc func(ctx context.Context, s *Scheme, c *Credential, scopes []string) (principal any, err error)

// Authenticate enforces an operation's security requirements on r before
// anything else reads the request: the alternatives are tried in order, and
// the first whose schemes all find their credentials and whose hooks all
// accept them admits the request, with the principal in its context
// (idem.WithPrincipal; with several schemes, each hook sees the principal
// so far and the last non-nil one is kept). An alternative whose hooks all
// return a nil principal (a nil pointer too) and no error does not admit the
// request: it counts as refused credentials (401) and is logged as an error
// naming its schemes, since a hook that accepts must say whose the
// credential is. A request that carries no
// credential of any of the schemes is anonymous: admitted, with no
// principal, when an alternative is empty, else 401. Otherwise, when no
// alternative admits it: 403 when a hook said idem.ErrForbidden, the hook's
// problem when it returned an *idemproblem.Problem, else 401. The error returned
// is that refusal, for the caller to answer with (idem.Engine.WriteError);
// the challenges of a 401 or 403 are already in w's WWW-Authenticate. Hook
// errors are never sent: they may hold credentials.
func Authenticate(w http.ResponseWriter, r *http.Request, alts []Requirement, hook HookFunc) (*http.Request, error) {
	if len(alts) == 0 {
		return r, nil
	}
	anonymous := false
	presented := false // a credential of some scheme of the operation was found
	var rejected, forbidden error
	var forbiddenUse *Use
	var missing []string
	var q url.Values
	creds := make([]*Credential, 0, 2)
	for _, alt := range alts {
		if len(alt) == 0 {
			anonymous = true
			continue
		}
		creds = creds[:0]
		complete := true
		for _, u := range alt {
			c, found, err := credential(r, u.Scheme, &q)
			if err != nil {
				presented = true
				rejected = err
				complete = false
				break
			}
			if !found {
				complete = false
				missing = append(missing, u.Scheme.Name)
				continue
			}
			presented = true
			creds = append(creds, c)
		}
		if !complete {
			continue
		}
		ctx := r.Context()
		var principal any
		admitted := true
		for i, u := range alt {
			p, err := hook(ctx, u.Scheme, creds[i], u.Scopes)
			if err != nil {
				admitted = false
				if errors.Is(err, idem.ErrForbidden) {
					forbidden, forbiddenUse = err, &alt[i]
				} else {
					rejected = err
				}
				break
			}
			if !isNil(p) {
				principal = p
				ctx = idem.WithPrincipal(ctx, p)
			}
		}
		if admitted && principal == nil {
			// Every hook accepted its credential without saying whose it
			// is: most often a lookup that found nothing and returned its
			// nil pointer with a nil error. Admitting the request would
			// make it anonymous, sharing the anonymous tenant's keys under
			// idem.PrincipalScope; it is refused instead, and logged, since
			// it is a bug of the hook the client cannot see.
			admitted = false
			rejected = errNoPrincipal
			names := make([]string, len(alt))
			for i, u := range alt {
				names[i] = u.Scheme.Name
			}
			slog.ErrorContext(r.Context(), "idemimpl: security hooks accepted credentials but returned no principal (nil); the request is refused with 401: return a non-nil principal to accept a credential, an error to refuse it",
				"schemes", names, "route", r.Pattern)
		}
		if admitted {
			return r.WithContext(idem.WithPrincipal(r.Context(), principal)), nil
		}
	}
	switch {
	case !presented && anonymous:
		return r, nil
	case forbidden != nil:
		if forbiddenUse.Scheme.Kind == SchemeBearer {
			ch := `Bearer error="insufficient_scope"`
			if len(forbiddenUse.Scopes) > 0 {
				ch += `, scope=` + strconv.Quote(strings.Join(forbiddenUse.Scopes, " "))
			}
			w.Header().Add("WWW-Authenticate", ch)
		}
		return r, forbidden
	}
	var p *idemproblem.Problem
	if errors.As(rejected, &p) {
		return r, p
	}
	seen := map[string]bool{}
	for _, alt := range alts {
		for _, u := range alt {
			ch := u.Scheme.Challenge
			if ch == "" || seen[ch] {
				continue
			}
			seen[ch] = true
			if u.Scheme.Kind == SchemeBearer && rejected != nil {
				ch += ` error="invalid_token"`
			}
			w.Header().Add("WWW-Authenticate", ch)
		}
	}
	detail := "the credentials were not accepted"
	if errors.Is(rejected, errMalformed) {
		detail = rejected.Error() // names where, never the value
	} else if !presented {
		detail = "the request carries no credentials; it needs " + strings.Join(uniq(missing), " or ")
	}
	return r, &idemproblem.Problem{Status: http.StatusUnauthorized, Code: idemproblem.CodeUnauthorized,
		Reason: idemproblem.ReasonUnauthenticated, Detail: detail, Err: rejected}
}

// errNoPrincipal is an alternative whose hooks all returned a nil principal
// and no error: a 401.
var errNoPrincipal = errors.New("the security hooks returned no principal")

// isNil reports whether a principal is nil, also a nil pointer, map, slice,
// function or channel in a non-nil interface.
func isNil(p any) bool {
	if p == nil {
		return true
	}
	switch v := reflect.ValueOf(p); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// errMalformed is a credential that is there but cannot be read: it is a
// 401, and the request is not anonymous.
var errMalformed = errors.New("malformed credentials")

// credential finds s's credential in r: found is false when the request
// carries none, err is set when it carries one that cannot be read (given
// twice, not in the scheme's syntax).
func credential(r *http.Request, s *Scheme, q *url.Values) (c *Credential, found bool, err error) {
	one := func(vals []string, where string) (string, bool, error) {
		switch {
		case len(vals) == 0:
			return "", false, nil
		case len(vals) > 1:
			return "", false, fmt.Errorf("%w: %s given %d times", errMalformed, where, len(vals))
		case vals[0] == "":
			return "", false, fmt.Errorf("%w: %s is empty", errMalformed, where)
		}
		return vals[0], true, nil
	}
	var v string
	switch s.Kind {
	case SchemeAPIKeyHeader:
		v, found, err = one(r.Header.Values(s.Param), "header "+s.Param)
	case SchemeAPIKeyQuery:
		if *q == nil {
			*q, _ = url.ParseQuery(r.URL.RawQuery)
		}
		v, found, err = one((*q)[s.Param], "query parameter "+s.Param)
	case SchemeAPIKeyCookie:
		var vals []string
		for _, ck := range r.CookiesNamed(s.Param) {
			vals = append(vals, ck.Value)
		}
		v, found, err = one(vals, "cookie "+s.Param)
	case SchemeBearer, SchemeBasic, SchemeHTTP:
		var auth string
		auth, found, err = one(r.Header.Values("Authorization"), "header Authorization")
		if !found {
			return nil, false, err
		}
		want := s.Param // SchemeHTTP
		switch s.Kind {
		case SchemeBearer:
			want = "Bearer"
		case SchemeBasic:
			want = "Basic"
		}
		name, rest, _ := strings.Cut(auth, " ")
		if !strings.EqualFold(name, want) {
			return nil, false, nil // another scheme's credentials
		}
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			return nil, false, fmt.Errorf("%w: %s credentials are empty", errMalformed, want)
		}
		if s.Kind != SchemeBasic {
			return &Credential{Value: rest}, true, nil
		}
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, false, fmt.Errorf("%w: Basic credentials are not base64", errMalformed)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, false, fmt.Errorf("%w: Basic credentials have no colon", errMalformed)
		}
		return &Credential{Username: user, Password: pass}, true, nil
	case SchemeMutualTLS:
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return nil, false, nil
		}
		return &Credential{Certificates: r.TLS.PeerCertificates}, true, nil
	default:
		return nil, false, nil
	}
	if !found {
		return nil, false, err
	}
	return &Credential{Value: v}, true, nil
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
