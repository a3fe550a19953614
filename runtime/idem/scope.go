package idem

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the values that make up a record's key besides the idempotency
// key itself (at most 255 bytes, by ParseKey). The three are the primary key
// of idem_records, and a B-tree entry holds at most 2704 bytes: a tenant or
// an operation ID without a bound turns every request into a 500 from
// PostgreSQL ("index row size exceeds btree maximum"). 255 bytes each keep
// the entry under 800 bytes.
const (
	MaxTenantBytes      = 255
	MaxOperationIDBytes = 255
)

// checkName checks a tenant or an operation ID: at most max bytes of UTF-8
// text without control characters (NUL included: PostgreSQL's text cannot
// hold it, and the others would end up in logs and in `idemgen records`
// output). The error names the rule, never the value.
func checkName(v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%d bytes, more than the %d allowed", len(v), max)
	}
	if !utf8.ValidString(v) {
		return errors.New("not valid UTF-8")
	}
	for i, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("byte %d is a control character (%U)", i+1, r)
		}
	}
	return nil
}

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
//
// A tenant out of bounds is the client's error (400): a ScopeFunc usually
// maps something the request carries (a header, a host name) to the tenant.
// PrincipalScope, whose tenant comes from the service's own data, refuses
// one itself as a server error (500) first.
func checkScope(r *http.Request, op *Operation, tenant string) error {
	if err := checkName(tenant, MaxTenantBytes); err != nil {
		return InvalidRequest("tenant", err)
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
			return InvalidRequest(fmt.Sprintf("query parameter %q", clip(name)), errors.New("name is not valid UTF-8 text"))
		}
		for _, v := range vals {
			if err := checkText(fmt.Sprintf("query parameter %q", clip(name)), v); err != nil {
				return err
			}
		}
	}
	return nil
}
