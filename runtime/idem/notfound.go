package idem

import (
	"net/http"
	"strings"
)

// Codes and reasons of the answers to requests that match no operation.
const (
	CodeNotFound         = "ERR404_NOT_FOUND"
	CodeMethodNotAllowed = "ERR405_METHOD_NOT_ALLOWED"
	ReasonNoOperation    = "NO_SUCH_OPERATION"
	ReasonMethod         = "METHOD_NOT_ALLOWED"
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
// or touches a record. Generated handlers wrap their ServeMux with it.
func Routed(mux *http.ServeMux, basePath string) http.Handler {
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
			NotFound(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeProblem(w, &Problem{Type: "about:blank", Title: http.StatusText(http.StatusMethodNotAllowed),
			Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Reason: ReasonMethod,
			Detail: r.Method + " is not an operation of " + p + "; allowed: " + strings.Join(allow, ", ")})
	})
}

// NotFound writes the 404 problem+json of a path under the base path that
// no operation declares (NO_SUCH_OPERATION).
func NotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, &Problem{Type: "about:blank", Title: http.StatusText(http.StatusNotFound),
		Status: http.StatusNotFound, Code: CodeNotFound, Reason: ReasonNoOperation,
		Detail: "no operation of this API has this path"})
}
