package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/runtime/idem"
)

// ResponseHeaderSet is the response headers an idempotent operation declares
// for one response key ("201", "2XX", "default"), which the engine stores
// and replays (idem.Operation.ResponseHeaders).
type ResponseHeaderSet struct {
	Status string
	Names  []string
}

// ResponseHeaderSets lists, by response key in the spec's order, the
// declared response headers the engine is to store for o. A key whose
// response declares none is listed (with no names) only where a range or
// default with names would otherwise apply to it. Headers the engine never
// stores (Set-Cookie, credentials, those a replay sets itself) are left out.
func (o *Operation) ResponseHeaderSets() []ResponseHeaderSet {
	var out []ResponseHeaderSet
	rangeNames, defaultNames := false, false
	for _, r := range o.Responses {
		if len(storableHeaders(r)) == 0 {
			continue
		}
		switch {
		case r.Status == "default":
			defaultNames = true
		case r.Code == 0:
			rangeNames = true
		}
	}
	for _, r := range o.Responses {
		names := storableHeaders(r)
		key := r.Status
		if key != "default" {
			key = strings.ToUpper(key)
		}
		switch {
		case len(names) > 0:
		case r.Code != 0 && (rangeNames || defaultNames):
		case r.Code == 0 && r.Status != "default" && defaultNames:
		default:
			continue
		}
		out = append(out, ResponseHeaderSet{Status: key, Names: names})
	}
	return out
}

func storableHeaders(r *Response) []string {
	var names []string
	for _, h := range r.Headers {
		if !idem.NeverStoredHeader(h.Name) {
			names = append(names, h.Name)
		}
	}
	return names
}

// warnUnstoredHeaders warns about each response header an idempotent
// operation declares that the engine never stores: its first response
// carries it, a replay does not.
func (b *builder) warnUnstoredHeaders(o *Operation) {
	for _, r := range o.Responses {
		for _, h := range r.Headers {
			if idem.NeverStoredHeader(h.Name) {
				b.warnf(diag.WarnTyped, fmt.Sprintf("operation %q", o.ID),
					"response %s declares header %s, which the idempotency engine never stores (cookies, credentials and headers a replay sets itself): the first response carries it, a replay does not",
					r.Status, h.Name)
			}
		}
	}
}

// StoredHeaders returns the response headers o declares for a response of
// status (those of the exact status, else of its range, else of default)
// that the idempotency engine stores and replays; nil when it declares none.
func (o *Operation) StoredHeaders(status int) []string {
	code, rng := strconv.Itoa(status), ""
	if status >= 100 && status <= 599 {
		rng = code[:1] + "XX"
	}
	var byRange, byDefault *Response
	for _, r := range o.Responses {
		switch {
		case r.Status == code:
			return storableHeaders(r)
		case strings.EqualFold(r.Status, rng):
			byRange = r
		case r.Status == "default":
			byDefault = r
		}
	}
	if byRange != nil {
		return storableHeaders(byRange)
	}
	if byDefault != nil {
		return storableHeaders(byDefault)
	}
	return nil
}
