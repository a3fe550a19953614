package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Refusals: the answers the engine and generated code give on their own,
// before (or instead of) a Server method's response. Each is an error,
// mapped to a *Problem by ProblemFor under the operation's profile (the
// status, the reason, the retry signals), then rendered as the response the
// client gets: by Config.Errors when the service sets it, else in the
// profile's body (ErrorBody). WriteError and Serve both go through
// writeError; nothing else turns an error into a status.

// ErrorMapper renders a refusal in a service's own error shape. p is what
// the engine found: Status (the profile's), Reason and Code, Detail, the
// Violations of an invalid request (Errors: JSON pointer, rule, detail),
// RetryAfter and Retryable. It returns the response to send: Status 0 means
// p.Status; Cache-Control: no-store, Retry-After and the profile's retry
// headers are added unless it sets them. A nil response falls back to the
// profile's body. Use JSONError to encode a typed body.
type ErrorMapper func(r *http.Request, p *idemproblem.Problem) *Response

// JSONError is the response of a refusal whose body is v encoded as JSON
// (application/json), with p's status. When v does not encode, the refusal
// is answered as a 500 problem instead.
func JSONError(p *idemproblem.Problem, v any) *Response {
	b, err := json.Marshal(v)
	if err != nil {
		return renderProblem(ProblemFor(fmt.Errorf("idem: encode error body: %w", err), ProfileDefault))
	}
	return &Response{Status: p.Status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

// ErrorBody describes the body of p's refusals.
func (p Profile) ErrorBody() idemproblem.ErrorBody {
	b := idemproblem.ErrorBody{MediaType: problemContentType, Members: idemproblem.Members()}
	if p == ProfileStripe {
		b = idemproblem.ErrorBody{MediaType: "application/json", Members: stripeMembers}
	}
	for _, err := range refusalSamples {
		if s := ProblemFor(err, p).Status; !slices.Contains(b.Statuses, s) {
			b.Statuses = append(b.Statuses, s)
		}
	}
	slices.Sort(b.Statuses)
	return b
}

// refusalSamples are one error of every kind the engine and generated code
// refuse a request with; ErrorBody derives a profile's statuses from them.
var refusalSamples = []error{
	ErrKeyRequired, ErrKeyMalformed, ErrFingerprintMismatch, ErrInFlight, ErrSchemaChanged,
	ErrExpired, ErrLeaseLost, ErrOutcomeUnknown, ErrBodyTooLarge, ErrBodyUnreadable,
	fmt.Errorf("%w: %w", ErrBodyUnreadable, timeoutError{}), ErrUnauthenticated, ErrForbidden,
	ErrUnsupportedMediaType, ErrNotImplemented, InvalidRequest("body", errors.New("invalid")),
	&idemproblem.ValidationError{Violations: []idemproblem.Violation{{In: "body", Pointer: "#/a", Rule: "required", Detail: "is required"}}},
	&pgconn.PgError{Code: "57P01"}, errors.New("internal"),
}

// timeoutError is a net.Error that timed out (a body read past the
// server's read timeout).
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// WriteError answers r with the refusal err stands for, as Serve would under
// profile: mapped by ProblemFor, rendered by Config.Errors or in the
// profile's body. Generated code calls it for what it refuses outside Serve:
// a request that does not decode or authenticate, an error of a Server
// method, an unimplemented operation. An error of a request whose client
// has gone away (its context cancelled) is ErrClientGone's (499). An
// error that maps to a 5xx is
// reported to Hooks.OnError and logged, since the client does not see its
// text: with w the writer Engine.Plain returned, the hook gets the
// operation and the request's own log line carries the error; otherwise
// the operation is nil and the error has a line of its own when there is
// no hook. A nil Engine writes the profile's body.
func (e *Engine) WriteError(w http.ResponseWriter, r *http.Request, profile Profile, err error) {
	if r != nil {
		err = hangUp(r.Context(), err, false) // a Server method cut off by its client's going away
	}
	p, _ := e.writeError(w, r, profile, err)
	sw, plain := w.(*statusWriter)
	if plain && sw.err == nil {
		sw.err = err // for Plain's done: the outcome, the log line
	}
	if !hiddenCause(err, p.Status) {
		return
	}
	ctx := context.Background()
	if r != nil {
		ctx = r.Context()
	}
	switch {
	case e != nil && e.cfg.Hooks.OnError != nil:
		var op *Operation
		if plain {
			op = sw.rq.op
		}
		e.cfg.Hooks.OnError(ctx, op, err)
	case plain && e != nil:
		// Plain's done logs it on the request's line.
	case e != nil:
		e.logger().ErrorContext(ctx, "idem: request failed", "error", err)
	default:
		slog.ErrorContext(ctx, "idem: request failed", "error", err)
	}
}

// ReadError recognises a refusal of profile p in a response: its status,
// reason and, for problem bodies, code. ok is false when the body is not in
// the profile's shape (a handler's own response, or a service that renders
// refusals with Config.Errors). It is the inverse of the profile's body,
// for clients and idemgen conformance: under ProfileStripe, lock_timeout
// reads as idemproblem.ReasonInProgress (a lost lease answers the same), a
// parameter_* code as idemproblem.ReasonInvalidRequest, any other code as the reason it
// was made from.
func (p Profile) ReadError(status int, header http.Header, body []byte) (*idemproblem.Problem, bool) {
	mt := jsonkit.MediaType(header.Get("Content-Type"))
	if p != ProfileStripe {
		var q idemproblem.Problem
		if mt != problemContentType || json.Unmarshal(body, &q) != nil {
			return nil, false
		}
		q.Status = status
		return &q, true
	}
	var env struct {
		Error *stripeError `json:"error"`
	}
	if mt != "application/json" || json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Type == "" {
		return nil, false
	}
	q := &idemproblem.Problem{Status: status, Detail: env.Error.Message, Reason: strings.ToUpper(env.Error.Code)}
	switch code := env.Error.Code; {
	case code == "lock_timeout":
		q.Reason = idemproblem.ReasonInProgress
	case strings.HasPrefix(code, "parameter_"):
		q.Reason = idemproblem.ReasonInvalidRequest
	}
	return q, true
}

// writeError maps err under profile and writes the refusal; it returns the
// problem and the status sent.
func (e *Engine) writeError(w http.ResponseWriter, r *http.Request, profile Profile, err error) (*idemproblem.Problem, int) {
	p := ProblemFor(err, profile)
	if errors.Is(err, ErrContentEncoding) && p.Status == http.StatusUnsupportedMediaType {
		w.Header().Set("Accept-Encoding", "identity") // the codings a request body may have
	}
	var resp *Response
	if e != nil && e.cfg.Errors != nil {
		resp = e.cfg.Errors(r, p)
	}
	if resp == nil {
		resp = render(profile, p)
	} else if resp.Status == 0 {
		resp.Status = p.Status
	}
	writeRefusal(w, resp, p, profile)
	return p, resp.Status
}

// render is the profile's body of p.
func render(profile Profile, p *idemproblem.Problem) *Response {
	if profile == ProfileStripe {
		return renderStripe(p)
	}
	return renderProblem(p)
}

// renderProblem is p as RFC 9457 application/problem+json.
func renderProblem(p *idemproblem.Problem) *Response {
	return &Response{Status: p.Status, Header: http.Header{"Content-Type": {problemContentType}}, Body: idemproblem.Encode(p)}
}

// writeRefusal writes resp, adding what every refusal carries unless resp
// sets it: Cache-Control: no-store, Retry-After, and the profile's retry
// signal (ProfileStripe: Stripe-Should-Retry, which Stripe's SDKs other
// than stripe-go obey).
func writeRefusal(w http.ResponseWriter, resp *Response, p *idemproblem.Problem, profile Profile) {
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	if p.RetryAfter > 0 && h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
	}
	if profile == ProfileStripe && h.Get("Stripe-Should-Retry") == "" {
		h.Set("Stripe-Should-Retry", strconv.FormatBool(p.Retryable))
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}
