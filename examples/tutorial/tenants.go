package main

import (
	"context"
	"net/http"
)

// tenantKey is the context key of the tenant a request acts for.
type tenantKey struct{}

// withTenants puts the tenant a request acts for in its context, and
// refuses a request that names none. Here a header says it; a real service
// takes it from the authenticated caller (an API key's account, a token's
// claim), never from something the client may set for another tenant.
func withTenants(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := r.Header.Get("X-Tenant")
		if tenant == "" {
			http.Error(w, "X-Tenant is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// tenantFrom is the tenant withTenants found.
func tenantFrom(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// scope is the engine's Config.Scope: records are kept per tenant, so one
// tenant's key never meets another's.
func scope(r *http.Request) (string, error) { return tenantFrom(r.Context()), nil }
