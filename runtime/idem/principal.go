package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// The authenticated principal of a request. A generated server runs the
// operation's security hooks before the engine (before any record is read
// or written) and puts what they return into the request's context, where
// the handler, a ScopeFunc and the engine's hooks find it.

type principalCtx struct{}

type principal struct{ p any }

// WithPrincipal returns a copy of ctx carrying p, the principal a security
// hook authenticated. Generated servers call it; a hand-written handler may.
func WithPrincipal(ctx context.Context, p any) context.Context {
	return context.WithValue(ctx, principalCtx{}, principal{p})
}

// PrincipalFromContext returns the principal of the request being served,
// as the security hook returned it. ok is false when the request was not
// authenticated: its operation requires no security, or allows anonymous
// requests (an empty requirement, `{}`) and got no credentials.
func PrincipalFromContext(ctx context.Context) (p any, ok bool) {
	v, ok := ctx.Value(principalCtx{}).(principal)
	return v.p, ok
}

// PrincipalAs returns the request's principal as a P: ok is false when the
// request was not authenticated or its principal is not a P.
func PrincipalAs[P any](ctx context.Context) (P, bool) {
	v, _ := PrincipalFromContext(ctx)
	p, ok := v.(P)
	return p, ok
}

// PrincipalScope returns a ScopeFunc that keys idempotency records by the
// principal's tenant, tenant(p): two principals with different tenants never
// see, replay or block each other's keys. An anonymous request (no
// principal) has the tenant "", which no principal may have: tenant(p) == ""
// is a server error, as is a principal that is not a P and a tenant longer
// than MaxTenantBytes or holding control characters (the tenant comes from
// the service's data, which the client cannot correct).
//
//	idem.New(pool, idem.Config{Operations: api.IdempotentOperations,
//		Scope: idem.PrincipalScope(func(u *auth.User) string { return u.OrgID })})
func PrincipalScope[P any](tenant func(P) string) ScopeFunc {
	return func(r *http.Request) (string, error) {
		v, ok := PrincipalFromContext(r.Context())
		if !ok {
			return "", nil
		}
		p, ok := v.(P)
		if !ok {
			var want P
			return "", internalProblem(fmt.Errorf("idem: PrincipalScope: the principal is a %T, not a %T", v, want))
		}
		t := tenant(p)
		if t == "" {
			return "", internalProblem(errors.New("idem: PrincipalScope: a principal has the empty tenant, which is the anonymous requests'"))
		}
		if err := checkName(t, MaxTenantBytes); err != nil {
			// The service's own data, not the client's: a server error.
			return "", internalProblem(fmt.Errorf("idem: PrincipalScope: a principal's tenant cannot key a record: %w", err))
		}
		return t, nil
	}
}

// internalProblem is a 500 whose cause is reported, not sent.
func internalProblem(err error) *idemproblem.Problem {
	return &idemproblem.Problem{Type: "about:blank", Title: http.StatusText(500), Status: 500, Code: idemproblem.CodeInternal, Reason: idemproblem.ReasonInternal, Err: err}
}
