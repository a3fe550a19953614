package idem

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// ProfileStripe's error body: Stripe's envelope, as its SDKs read it
// (stripe-go's ResponseToError: a typed *stripe.Error when the body has an
// "error" member, typed further by error.type). The statuses are in
// profileStatuses; the retry signal, Stripe-Should-Retry, in writeRefusal.
//
// How a refusal fills it:
//
//	type     api_error for a 5xx; idempotency_error for a key reused with
//	         another payload, under another response schema version, or
//	         expired; invalid_request_error otherwise
//	code     lock_timeout for a request in flight or a lost lease (429:
//	         stripe-go, -ruby, -php and -node retry it, and nothing else
//	         with a Stripe body); for an invalid request, from its first
//	         violation's rule: parameter_missing (required),
//	         parameter_unknown (additionalProperties), else
//	         parameter_invalid_<rule> (parameter_invalid_max_length);
//	         otherwise the contract's reason in lower case
//	         (idempotency_key_malformed, conflicting_idempotent_request)
//	message  the problem's detail; every violation of an invalid request
//	param    the first violation's parameter in Stripe's bracket notation:
//	         metadata[order_id], items[0][price], expand[0]

// stripeEnvelope is Stripe's error body.
type stripeEnvelope struct {
	Error stripeError `json:"error"`
}

type stripeError struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

// Stripe's error types that refusals use.
const (
	stripeAPIError         = "api_error"
	stripeIdempotencyError = "idempotency_error"
	stripeInvalidRequest   = "invalid_request_error"
)

// stripeMembers are the members of stripeEnvelope.
var stripeMembers = []idemproblem.ErrorMember{
	{Pointer: "/error", Type: "object", Always: true, Shape: true},
	{Pointer: "/error/type", Type: "string", Values: []string{stripeAPIError, stripeIdempotencyError, stripeInvalidRequest}, Always: true, Shape: true},
	{Pointer: "/error/code", Type: "string"},
	{Pointer: "/error/message", Type: "string", Always: true},
	{Pointer: "/error/param", Type: "string"},
}

// renderStripe encodes p as Stripe's error envelope.
func renderStripe(p *idemproblem.Problem) *Response {
	e := stripeError{Type: stripeInvalidRequest, Code: strings.ToLower(p.Reason), Message: p.Detail}
	switch {
	case p.Status >= 500:
		e.Type = stripeAPIError
	case p.Reason == idemproblem.ReasonConflict || p.Reason == idemproblem.ReasonSchemaChanged || p.Reason == idemproblem.ReasonExpired:
		e.Type = stripeIdempotencyError
	}
	switch p.Reason {
	case idemproblem.ReasonInProgress, idemproblem.ReasonLeaseLost:
		e.Code = "lock_timeout"
	}
	if len(p.Errors) > 0 {
		v := p.Errors[0]
		e.Param, e.Code = stripeParam(v), violationCode(v.Rule)
		msgs := make([]string, len(p.Errors))
		for i, v := range p.Errors {
			msgs[i] = v.Detail
			if param := stripeParam(v); param != "" {
				msgs[i] = param + ": " + v.Detail
			}
		}
		e.Message = strings.Join(msgs, "; ")
	}
	if e.Message == "" {
		e.Message = http.StatusText(p.Status)
	}
	b, err := json.Marshal(stripeEnvelope{Error: e})
	if err != nil { // strings always marshal; be safe anyway
		b = []byte(`{"error":{"type":"api_error","message":"Internal Server Error"}}`)
	}
	return &Response{Status: p.Status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

// violationCode is Stripe's code for a violation of rule.
func violationCode(rule string) string {
	switch rule {
	case "required":
		return "parameter_missing"
	case "additionalProperties", "properties":
		return "parameter_unknown"
	}
	var b strings.Builder
	b.WriteString("parameter_invalid_")
	for i, r := range rule {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// stripeParam names where a violation is as Stripe's param does: the
// parameter, then each token of the JSON pointer in brackets; a body member
// starts with its first token (metadata[order_id], items[0][price]). ""
// for the whole body.
func stripeParam(v idemproblem.Violation) string {
	ptr := strings.TrimPrefix(strings.TrimPrefix(v.Pointer, "#"), "/")
	var toks []string
	if ptr != "" || strings.HasPrefix(strings.TrimPrefix(v.Pointer, "#"), "/") {
		for _, t := range strings.Split(ptr, "/") {
			toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
		}
	}
	var b strings.Builder
	b.WriteString(v.Parameter)
	if v.In == "body" || v.Parameter == "" {
		if len(toks) == 0 {
			return b.String()
		}
		b.WriteString(toks[0])
		toks = toks[1:]
	}
	for _, t := range toks {
		b.WriteString("[" + t + "]")
	}
	return b.String()
}
