package idem

import (
	"net/http"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// probeMethods are the methods Routed tries to build a 405's Allow header.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// Routed answers, in the contract's shape, what mux does not route under
// basePath: a path no operation declares is 404 problem+json
// (NO_SUCH_OPERATION), a declared path with another method 405
// problem+json (METHOD_NOT_ALLOWED) with an Allow header. A path outside
// basePath is not the API's: it gets http.NotFound's text/plain 404, as a
// router in front of the handler would answer it. Neither reads the body
// or touches a record. It is Engine.Routed of no engine under
// ProfileDefault; generated handlers use Engine.Routed, which follows the
// spec's profile and Config.Errors.
func Routed(mux *http.ServeMux, basePath string) http.Handler {
	return (*Engine)(nil).Routed(mux, basePath, ProfileDefault)
}

// Routed is the package's Routed for e's service: the 404 and 405 of what
// mux does not route under basePath are refusals like the engine's others,
// rendered in profile's body (ProfileStripe: Stripe's error object, type
// invalid_request_error, code no_such_operation or method_not_allowed) or
// by Config.Errors when it is set, so that a client reads them as it reads
// every other refusal. The 405 keeps its Allow header. e may be nil (no
// Config.Errors then). Generated handlers wrap their ServeMux with it,
// under the profile of the spec's root x-idempotent.
func (e *Engine) Routed(mux *http.ServeMux, basePath string, profile Profile) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		p := r.URL.Path
		if basePath != "" && p != basePath && !strings.HasPrefix(p, basePath+"/") {
			http.NotFound(w, r)
			return
		}
		var allow []string
		probe := *r
		for _, m := range probeMethods {
			probe.Method = m
			if _, pattern := mux.Handler(&probe); pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			e.writeError(w, r, profile, notFoundProblem())
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		e.writeError(w, r, profile, &idemproblem.Problem{Type: "about:blank", Title: http.StatusText(http.StatusMethodNotAllowed),
			Status: http.StatusMethodNotAllowed, Code: idemproblem.CodeMethodNotAllowed, Reason: idemproblem.ReasonMethod,
			Detail: r.Method + " is not an operation of " + p + "; allowed: " + strings.Join(allow, ", ")})
	})
}

// NotFound writes the 404 problem+json of a path under the base path that
// no operation declares (NO_SUCH_OPERATION).
func NotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, notFoundProblem())
}

func notFoundProblem() *idemproblem.Problem {
	return &idemproblem.Problem{Type: "about:blank", Title: http.StatusText(http.StatusNotFound),
		Status: http.StatusNotFound, Code: idemproblem.CodeNotFound, Reason: idemproblem.ReasonNoOperation,
		Detail: "no operation of this API has this path"}
}
