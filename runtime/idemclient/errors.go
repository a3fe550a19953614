package idemclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// The contract's problem reasons a client acts on (the members "reason" of
// the server's problem+json) are idemproblem's; these forward to them (the
// same values).
//
// Deprecated: use idemproblem.ReasonConflict (runtime/idemproblem) and the
// other Reason constants of that package, of the same names.
const (
	ReasonKeyRequired    = idemproblem.ReasonKeyRequired
	ReasonKeyMalformed   = idemproblem.ReasonKeyMalformed
	ReasonConflict       = idemproblem.ReasonConflict
	ReasonInProgress     = idemproblem.ReasonInProgress
	ReasonSchemaChanged  = idemproblem.ReasonSchemaChanged
	ReasonExpired        = idemproblem.ReasonExpired
	ReasonLeaseLost      = idemproblem.ReasonLeaseLost
	ReasonOutcomeUnknown = idemproblem.ReasonOutcomeUnknown
	ReasonDatabaseDown   = idemproblem.ReasonDatabaseDown
)

// Problem is idemproblem.Problem, the contract's problem+json, which
// Error.Problem holds decoded.
//
// Deprecated: use idemproblem.Problem (runtime/idemproblem).
type Problem = idemproblem.Problem

// Error is a final response the operation does not declare: a problem+json
// the contract answers (409 conflict, 400 malformed key, 503 ...), or any
// other status. It is what the call ended with after its retries.
type Error struct {
	Operation string
	Status    int
	// Problem is the decoded problem+json body; nil when the body is not one.
	Problem    *idemproblem.Problem
	Header     http.Header
	Body       []byte
	RetryAfter time.Duration // from Retry-After; 0 when absent
	Key        string        // the idempotency key the call carried
	// KeySite is the call site Key was derived for inside an idempotent
	// request (Result.KeySite); "" when it was given or minted.
	KeySite  string
	Attempts int
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s", e.Operation, e.Status, http.StatusText(e.Status))
	if p := e.Problem; p != nil {
		if p.Code != "" || p.Reason != "" {
			fmt.Fprintf(&b, " (%s %s)", p.Code, p.Reason)
		}
		if p.Detail != "" {
			b.WriteString(": " + p.Detail)
		}
		if e.KeySite != "" && p.Reason == idemproblem.ReasonConflict {
			b.WriteString(derivedConflict(e.KeySite))
		}
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, ", after %d attempts", e.Attempts)
	}
	return b.String()
}

// Code is the problem's code member ("" when there is none).
func (e *Error) Code() string {
	if e.Problem == nil {
		return ""
	}
	return e.Problem.Code
}

// Reason is the problem's reason member ("" when there is none).
func (e *Error) Reason() string {
	if e.Problem == nil {
		return ""
	}
	return e.Problem.Reason
}

// Error returns the *Error for r, a response the operation does not
// declare: the end of every generated decoder.
func (r *Response) Error() error {
	e := &Error{Operation: r.Operation, Status: r.Status, Header: r.Header, Body: r.Body, Key: r.Key, KeySite: r.KeySite, Attempts: r.Attempts,
		Problem: problemOf(r)}
	if ra, ok := ParseRetryAfter(r.Header); ok {
		e.RetryAfter = ra
	}
	return e
}

func problemOf(r *Response) *idemproblem.Problem {
	if jsonkit.MediaType(r.Header.Get("Content-Type")) != idemproblem.ContentType {
		return nil
	}
	var p idemproblem.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		return nil
	}
	return &p
}

// TransportError is a call that ended without a final response: the
// connection failed on the last attempt, or the context ended the call.
// Its outcome on the server is unknown; for an idempotent operation a
// later call with the same key (WithIdempotencyKey(e.Key)) finds it out.
type TransportError struct {
	Operation string
	Key       string
	Attempts  int
	Err       error
	// Unsafe is set when the call may not be sent again: an operation that
	// is not idempotent (no key) nor idempotent by HTTP's definition, called
	// without WithRetryUnsafe. The request may have run; sending it again
	// may run it twice.
	Unsafe bool
}

func (e *TransportError) Error() string {
	s := fmt.Sprintf("%s: %v", e.Operation, e.Err)
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

func (e *TransportError) Unwrap() error { return e.Err }

// DecodeError is a declared response whose body does not decode.
type DecodeError struct {
	Operation string
	Status    int
	Body      []byte
	Err       error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: decoding the %d response: %v", e.Operation, e.Status, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// IsConflict reports whether err is the server refusing a key already used
// with another request (409, or 422 under profile ietf,
// CONFLICTING_IDEMPOTENT_REQUEST): retrying cannot help; the caller sent
// two different requests under one key.
func IsConflict(err error) bool { return reasonIs(err, idemproblem.ReasonConflict) }

// IsInFlight reports whether err is 409 IDEMPOTENT_REQUEST_IN_PROGRESS: the
// call ended (its attempts or its context ran out) while an earlier request
// with its key still ran. Calling again with the same key gets its outcome.
func IsInFlight(err error) bool { return reasonIs(err, idemproblem.ReasonInProgress) }

// IsKeyError reports whether the server refused the key itself (missing or
// not in the operation's keyFormat).
func IsKeyError(err error) bool {
	return reasonIs(err, idemproblem.ReasonKeyRequired) || reasonIs(err, idemproblem.ReasonKeyMalformed)
}

// IsRetryable reports whether the same call may succeed later with the
// same key: a transport error or the context ending (unless the operation
// may not be sent again: TransportError.Unsafe), a request in flight, a
// lost lease, an unknown outcome, 408, 429 or a 5xx other than 501 and 505.
func IsRetryable(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return !te.Unsafe
	}
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch s := e.Status; {
	case s == http.StatusConflict:
		return e.Reason() == idemproblem.ReasonInProgress || e.Reason() == idemproblem.ReasonLeaseLost
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
		return true
	case s == http.StatusNotImplemented, s == http.StatusHTTPVersionNotSupported:
		return false
	default:
		return s >= 500
	}
}

func reasonIs(err error, reason string) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason() == reason
}

// StatusOf is the status of the response err ended with; 0 when none came.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	var d *DecodeError
	if errors.As(err, &d) {
		return d.Status
	}
	return 0
}
