package idem

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// checkText refuses a value that PostgreSQL's text type cannot hold (a NUL
// byte) or that is not UTF-8: the record key is text, and handlers store
// path and query values in text columns. Such a value is a client error,
// found before any statement runs.
func checkText(where, v string) error {
	if i := strings.IndexByte(v, 0); i >= 0 {
		return InvalidRequest(where, fmt.Errorf("byte %d is NUL", i+1))
	}
	if !utf8.ValidString(v) {
		return InvalidRequest(where, errors.New("not valid UTF-8"))
	}
	return nil
}

// checkScope checks every value of the request that goes into its record
// key or its fingerprint besides the body: the tenant, the path parameters
// and the query parameters (names and values, as decoded). The key itself is
// checked by ParseKey, the body by the operation's decoder.
func checkScope(r *http.Request, op *Operation, tenant string) error {
	if err := checkText("tenant", tenant); err != nil {
		return err
	}
	for _, name := range op.PathParams {
		if err := checkText(fmt.Sprintf("path parameter %q", name), r.PathValue(name)); err != nil {
			return err
		}
	}
	if r.URL == nil || r.URL.RawQuery == "" {
		return nil
	}
	// What does not decode is hashed as given and never reaches a handler
	// decoded (url.Values drops it); what decodes is checked.
	q, _ := url.ParseQuery(r.URL.RawQuery)
	for name, vals := range q {
		if !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 {
			return InvalidRequest(fmt.Sprintf("query parameter %q", name), errors.New("name is not valid UTF-8 text"))
		}
		for _, v := range vals {
			if err := checkText(fmt.Sprintf("query parameter %q", name), v); err != nil {
				return err
			}
		}
	}
	return nil
}
