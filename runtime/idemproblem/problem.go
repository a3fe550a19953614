// Package idemproblem is the problem+json of idemgen's HTTP contract: its
// vocabulary (the Code and Reason constants), the RFC 9457 problem detail a
// refusal is answered with (Problem), the
// violations of a request that breaks its schema (Violation,
// ValidationError), its encoding (Encode, ContentType), and the description
// of an error body that idemgen checks a spec's declared error schemas
// against (ErrorBody, ErrorMember).
//
// Which problem an error becomes — status, code, reason, retry signals —
// is the engine's decision, made in one place: idem.ProblemFor, under an
// operation's profile, from this package's codes and reasons, which
// clients read too (runtime/idemclient).
package idemproblem

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ContentType is the media type of an encoded Problem.
const ContentType = "application/problem+json"

// Problem is an RFC 9457 problem detail with the contract's code and reason
// members. A handler or idem.ScopeFunc may return one to choose the response.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code"`
	Reason   string `json:"reason"`
	// Errors lists every violation of a request that breaks its schema
	// (RFC 9457 section 3's "errors" extension member).
	Errors []Violation `json:"errors,omitempty"`
	// RetryAfter, when positive, is sent as a Retry-After header (seconds).
	RetryAfter time.Duration `json:"-"`
	// Retryable says that the same request, under the same key, may succeed
	// later: a request in flight, a lost lease, an unknown outcome, the
	// database unavailable, a handler that failed (its key is
	// FAILED_RETRYABLE), a body that arrived too slowly. Profiles send it
	// as their retry signal (idem.ProfileStripe: Stripe-Should-Retry).
	Retryable bool `json:"-"`
	// Err is the cause; it is never written to the client.
	Err error `json:"-"`
}

func (p *Problem) Error() string {
	s := fmt.Sprintf("%d %s: %s", p.Status, p.Code, p.Reason)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	if p.Err != nil {
		// For logs and hooks; the client gets the marshalled fields.
		s += ": " + p.Err.Error()
	}
	return s
}

func (p *Problem) Unwrap() error { return p.Err }

// Encode is p as RFC 9457 application/problem+json (ContentType).
func Encode(p *Problem) []byte {
	b, err := json.Marshal(p)
	if err != nil { // a Problem always marshals; be safe anyway
		b = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500}`)
	}
	return b
}

// Violation is one way a request breaks its operation's schema.
type Violation struct {
	// In is where the offending value is: body, path, query, header or cookie.
	In string `json:"in"`
	// Parameter names the parameter (In is not body).
	Parameter string `json:"parameter,omitempty"`
	// Pointer is an RFC 6901 JSON pointer, as a URI fragment, to the
	// offending value inside the body or inside a structured parameter:
	// "#/items/0/quantity". "#" is the whole body.
	Pointer string `json:"pointer,omitempty"`
	// Rule is the schema keyword the value breaks ("minimum", "required",
	// "type", "additionalProperties"), or "syntax" for a value that does not
	// parse as its media type says.
	Rule string `json:"rule"`
	// Detail says what was expected, for a person.
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	where := v.In
	if v.Parameter != "" {
		where += " parameter " + strconv.Quote(v.Parameter)
	}
	if v.Pointer != "" && (v.Pointer != "#" || v.Parameter != "") {
		where += " " + v.Pointer
	}
	return where + ": " + v.Detail
}

// ValidationError is a request that breaks its operation's schema, with
// every violation found. The engine answers it with one 400 problem+json
// listing them, and it never leaves an idempotency record.
type ValidationError struct {
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("request invalid: ")
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// ErrorBody describes the body of a profile's refusals (idem.Profile's
// ErrorBody), so that idemgen can check a spec's declared error schema
// against it (generation fails when a declared schema cannot hold it or
// requires what it does not fill).
type ErrorBody struct {
	// MediaType is the Content-Type of the body; a declared response is
	// checked when it declares this media type.
	MediaType string
	// Statuses are the statuses the profile's refusals may have, sorted.
	Statuses []int
	// Members are every member the body may hold, parents before children.
	Members []ErrorMember
}

// ErrorMember is one member of a refusal's body.
type ErrorMember struct {
	// Pointer is the member's RFC 6901 JSON pointer: "/error/type".
	Pointer string
	// Type is its JSON type: object, string, integer or array.
	Type string
	// Values, when not nil, are every value the member may take (a string
	// the declared schema may restrict with an enum).
	Values []string
	// Always: the member is in every refusal's body, so a declared schema
	// may require it.
	Always bool
	// Shape: the declared schema must declare the member, since a body of
	// this shape is recognised by it (Stripe's SDKs look for error.type).
	Shape bool
}

// Members are the members of a problem as Encode writes it.
func Members() []ErrorMember {
	return []ErrorMember{
		{Pointer: "/type", Type: "string", Always: true},
		{Pointer: "/title", Type: "string", Always: true},
		{Pointer: "/status", Type: "integer", Always: true},
		{Pointer: "/detail", Type: "string"},
		{Pointer: "/instance", Type: "string"},
		{Pointer: "/code", Type: "string", Always: true},
		{Pointer: "/reason", Type: "string", Always: true},
		{Pointer: "/errors", Type: "array"},
	}
}
