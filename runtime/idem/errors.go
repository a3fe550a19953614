package idem

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors. The engine wraps them with detail; test with errors.Is or
// the predicates below. ProblemFor maps each to its HTTP problem.
var (
	ErrKeyRequired         = errors.New("idempotency key required")
	ErrKeyMalformed        = errors.New("idempotency key malformed")
	ErrFingerprintMismatch = errors.New("idempotency key reused with another request")
	ErrInFlight            = errors.New("a request with this idempotency key is in progress")
	ErrSchemaChanged       = errors.New("stored response was produced under another response schema version")
	ErrExpired             = errors.New("idempotency key expired")
	ErrLeaseLost           = errors.New("lease on the idempotency key was taken over")
	ErrOutcomeUnknown      = errors.New("outcome of an earlier attempt with this idempotency key is unknown")
	ErrBodyTooLarge        = errors.New("request body too large")
	// ErrBodyUnreadable wraps an error reading the request body (the client
	// went away, or sent it slower than the server's read timeout allows);
	// the client gets 408 or 400 without the network error's text.
	ErrBodyUnreadable  = errors.New("request body could not be read")
	ErrUnauthenticated = errors.New("request scope could not be resolved")
	// ErrForbidden is returned (or wrapped) by a security hook whose
	// credentials are valid but not allowed to do what the request asks
	// (missing scopes, say): 403, and no idempotency record.
	ErrForbidden = errors.New("forbidden")
	ErrNoLease   = errors.New("not inside a lease-mode idempotent handler")
	// ErrHoldExpired is the cause (context.Cause) of a lease-mode handler's
	// context ending at its maximum hold time (Config.MaxHold, x-idempotent
	// maxHold); the context's Err is context.DeadlineExceeded.
	ErrHoldExpired = errors.New("the attempt held its idempotency claim for the longest time allowed")
	// ErrUnsupportedMediaType is wrapped by the error for a request body
	// whose media type the operation does not declare: 415.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrContentEncoding is wrapped, with ErrUnsupportedMediaType, by the
	// error for a request body in a content coding (Content-Encoding: gzip,
	// br, ...) that the operation does not declare: 415 with
	// Accept-Encoding: identity (RFC 9110, section 15.5.16). idemgen's
	// decoders take bodies as sent; an operation that declares a
	// Content-Encoding header parameter gets them in any coding, to decode
	// itself.
	ErrContentEncoding = errors.New("the request body has a content coding")
	// ErrResponseTooLarge is wrapped by the error for a response larger than
	// Config.MaxStoredResponseBytes, which cannot be stored for replay.
	ErrResponseTooLarge = errors.New("response too large to store for replay")
	// ErrNotImplemented is what the generated Unimplemented server returns
	// for an operation the service does not implement yet: 501, rendered in
	// the profile's body like every refusal. It is a *Problem.
	ErrNotImplemented error = &idemproblem.Problem{Status: http.StatusNotImplemented, Code: idemproblem.CodeNotImplemented, Reason: idemproblem.ReasonNotImplemented,
		Detail: "the operation is not implemented"}
)

const (
	problemContentType     = idemproblem.ContentType
	defaultRetryAfterDelay = time.Second
)

// retryAfterError attaches a Retry-After delay to an error.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

func withRetryAfter(err error, d time.Duration) error {
	if d < time.Second {
		d = time.Second
	}
	return &retryAfterError{err: err, after: d}
}

// PanicError is the error a recovered handler panic becomes.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("idem: handler panicked: %v", e.Value) }

// IsConflict reports whether err is a conflict on the idempotency key: another
// payload, a request in flight, a changed schema, an expired key or a lost lease.
func IsConflict(err error) bool {
	return errors.Is(err, ErrFingerprintMismatch) || errors.Is(err, ErrInFlight) ||
		errors.Is(err, ErrSchemaChanged) || errors.Is(err, ErrExpired) || errors.Is(err, ErrLeaseLost)
}

// IsKeyError reports whether err is a missing or malformed idempotency key.
func IsKeyError(err error) bool {
	return errors.Is(err, ErrKeyRequired) || errors.Is(err, ErrKeyMalformed)
}

// IsRequestError reports whether err is a client error that leaves no record:
// a key error, a *RequestError or *ValidationError, a body that is too large
// or of a media type the operation does not accept.
func IsRequestError(err error) bool {
	var re *RequestError
	var ve *idemproblem.ValidationError
	var mbe *http.MaxBytesError
	return IsKeyError(err) || errors.As(err, &re) || errors.As(err, &ve) || errors.As(err, &mbe) ||
		errors.Is(err, ErrBodyTooLarge) || errors.Is(err, ErrBodyUnreadable) || errors.Is(err, ErrUnsupportedMediaType)
}

// IsRetryable reports whether the client may retry the same request later
// (in flight, lease lost, outcome unknown, the database unavailable).
func IsRetryable(err error) bool {
	return errors.Is(err, ErrInFlight) || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrOutcomeUnknown) ||
		databaseUnavailable(err)
}

// ProblemFor maps err to the problem the client gets under profile. It is the
// one place errors become HTTP statuses; Serve and Engine.WriteError both use it.
// Errors it does not know become a 500 whose detail does not leak err.
func ProblemFor(err error, profile Profile) *idemproblem.Problem {
	var p *idemproblem.Problem
	if errors.As(err, &p) {
		q := *p
		if q.Type == "" {
			q.Type = "about:blank"
		}
		if q.Title == "" {
			q.Title = http.StatusText(q.Status)
		}
		return &q
	}
	mk := func(status int, code, reason, detail string) *idemproblem.Problem {
		p := &idemproblem.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status,
			Code: code, Reason: reason, Detail: detail, Err: err}
		var ra *retryAfterError
		if errors.As(err, &ra) {
			p.RetryAfter = ra.after
		}
		return p
	}
	p = problemOf(err, mk)
	if st, ok := profileStatuses[profile][p.Reason]; ok {
		p.Status, p.Title, p.Code = st, http.StatusText(st), statusCodes[st]
	}
	switch p.Reason {
	case idemproblem.ReasonInProgress, idemproblem.ReasonLeaseLost, idemproblem.ReasonOutcomeUnknown, idemproblem.ReasonDatabaseDown, idemproblem.ReasonInternal, idemproblem.ReasonClientClosed:
		p.Retryable = true
	case idemproblem.ReasonBodyUnreadable:
		p.Retryable = p.Status == http.StatusRequestTimeout
	}
	return p
}

// profileStatuses are the statuses where a profile departs from the
// default profile's, by reason; the problem's code follows the status.
var profileStatuses = map[Profile]map[string]int{
	ProfileIETF: {idemproblem.ReasonConflict: http.StatusUnprocessableEntity},
	// Stripe answers a key's misuse with 400 idempotency_error. A
	// duplicate in flight (or a lost lease) is 429 lock_timeout, the one
	// refusal Stripe's SDKs retry: the retry gets the first's response.
	ProfileStripe: {
		idemproblem.ReasonConflict: http.StatusBadRequest, idemproblem.ReasonSchemaChanged: http.StatusBadRequest, idemproblem.ReasonExpired: http.StatusBadRequest,
		idemproblem.ReasonInProgress: http.StatusTooManyRequests, idemproblem.ReasonLeaseLost: http.StatusTooManyRequests,
	},
}

// statusCodes are the problem codes of the statuses in profileStatuses.
var statusCodes = map[int]string{
	http.StatusBadRequest:          idemproblem.CodeInvalidRequest,
	http.StatusUnprocessableEntity: idemproblem.CodeUnprocessable,
	http.StatusTooManyRequests:     idemproblem.CodeTooManyRequests,
}

// problemOf is ProblemFor's mapping under the default profile.
func problemOf(err error, mk func(status int, code, reason, detail string) *idemproblem.Problem) *idemproblem.Problem {
	var re *RequestError
	var ve *idemproblem.ValidationError
	var mbe *http.MaxBytesError
	var pe *PanicError
	var uo *unknownOutcomeError
	switch {
	// First: their causes (a cancelled statement's, say) may match below.
	case errors.Is(err, ErrClientGone):
		return mk(499, idemproblem.CodeClientClosed, idemproblem.ReasonClientClosed, "the client closed the connection before the response")
	case errors.Is(err, ErrHandlerTxFailed):
		return mk(500, idemproblem.CodeInternal, idemproblem.ReasonInternal, "the response could not be stored: a statement of the service's transaction failed before it answered")
	case errors.Is(err, ErrKeyRequired):
		return mk(400, idemproblem.CodeMalformedHeader, idemproblem.ReasonKeyRequired, "the request needs an idempotency key header")
	case errors.Is(err, ErrKeyMalformed):
		return mk(400, idemproblem.CodeMalformedHeader, idemproblem.ReasonKeyMalformed, err.Error())
	case errors.As(err, &mbe), errors.Is(err, ErrBodyTooLarge):
		return mk(413, idemproblem.CodeTooLarge, idemproblem.ReasonBodyTooLarge, "the request body is larger than the server accepts")
	case errors.Is(err, ErrBodyUnreadable):
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return mk(408, idemproblem.CodeRequestTimeout, idemproblem.ReasonBodyUnreadable, "the request body did not arrive in time")
		}
		return mk(400, idemproblem.CodeInvalidRequest, idemproblem.ReasonBodyUnreadable, "the request body could not be read")
	case errors.Is(err, ErrUnsupportedMediaType):
		return mk(415, idemproblem.CodeMediaType, idemproblem.ReasonMediaType, err.Error())
	case errors.As(err, &ve):
		p := mk(400, idemproblem.CodeInvalidRequest, idemproblem.ReasonInvalidRequest, violationsDetail(ve.Violations))
		p.Errors = ve.Violations
		return p
	case errors.As(err, &re):
		var se *json.SyntaxError
		if errors.Is(err, ErrInvalidJSON) || errors.As(err, &se) {
			return mk(400, idemproblem.CodeInvalidRequest, idemproblem.ReasonInvalidJSON, err.Error())
		}
		return mk(400, idemproblem.CodeInvalidRequest, idemproblem.ReasonInvalidRequest, err.Error())
	case errors.Is(err, ErrUnauthenticated):
		return mk(401, idemproblem.CodeUnauthorized, idemproblem.ReasonUnauthenticated, "the request could not be authenticated")
	case errors.Is(err, ErrForbidden):
		return mk(403, idemproblem.CodeForbidden, idemproblem.ReasonForbidden, "the credentials do not allow this request")
	case errors.Is(err, ErrFingerprintMismatch):
		return mk(409, idemproblem.CodeConflict, idemproblem.ReasonConflict, "the idempotency key was already used with another request payload")
	case errors.Is(err, ErrInFlight):
		p := mk(409, idemproblem.CodeConflict, idemproblem.ReasonInProgress, "a request with this idempotency key is still being processed")
		if p.RetryAfter <= 0 {
			p.RetryAfter = defaultRetryAfterDelay
		}
		return p
	case errors.Is(err, ErrSchemaChanged):
		return mk(409, idemproblem.CodeConflict, idemproblem.ReasonSchemaChanged, "the stored response was produced under another response schema version")
	case errors.Is(err, ErrExpired):
		return mk(409, idemproblem.CodeConflict, idemproblem.ReasonExpired, "the idempotency key has expired; use a new key")
	case errors.Is(err, ErrLeaseLost):
		p := mk(409, idemproblem.CodeConflict, idemproblem.ReasonLeaseLost, "another attempt took this idempotency key over; retry to get its outcome")
		if p.RetryAfter <= 0 {
			p.RetryAfter = defaultRetryAfterDelay
		}
		return p
	case errors.As(err, &uo):
		p := mk(503, idemproblem.CodeUnavailable, idemproblem.ReasonOutcomeUnknown,
			"the connection to the database was lost before this request's outcome was known; retry with the same idempotency key to learn it")
		if p.RetryAfter <= 0 {
			p.RetryAfter = defaultRetryAfterDelay
		}
		return p
	case errors.Is(err, ErrOutcomeUnknown):
		p := mk(503, idemproblem.CodeUnavailable, idemproblem.ReasonOutcomeUnknown, "the outcome of an earlier attempt is not known yet; retry later")
		if p.RetryAfter <= 0 {
			p.RetryAfter = defaultRetryAfterDelay
		}
		return p
	case databaseUnavailable(err):
		// The request did not run, or its transaction did not commit, or
		// the connection broke during COMMIT: in every case a retry with
		// the same key finds out (it replays or runs).
		p := mk(503, idemproblem.CodeUnavailable, idemproblem.ReasonDatabaseDown, "the database is unavailable; retry with the same idempotency key")
		if p.RetryAfter <= 0 {
			p.RetryAfter = defaultRetryAfterDelay
		}
		return p
	case errors.As(err, &pe):
		return mk(500, idemproblem.CodeInternal, idemproblem.ReasonInternal, "")
	default:
		return mk(500, idemproblem.CodeInternal, idemproblem.ReasonInternal, "")
	}
}

func violationsDetail(vs []idemproblem.Violation) string {
	if len(vs) == 1 {
		return vs[0].String()
	}
	return fmt.Sprintf("%d problems with the request, listed in errors", len(vs))
}

// databaseUnavailable reports whether err says PostgreSQL cannot take the
// request's writes now, whatever statement it came from: it could not be
// reached or went away (a failed connect, a broken or closed connection, a
// pooled one that died with its server, say: SQLSTATE class 08), it is
// shutting down, crashed or still starting (57P01 admin_shutdown, 57P02
// crash_shutdown, 57P03 cannot_connect_now), or it takes no writes
// (25006 read_only_sql_transaction: a hot standby, a primary being demoted
// or not yet promoted in a failover, default_transaction_read_only set).
// None of them says anything about the request: a retry of it, on the
// primary a new connection finds, runs or replays as if nothing happened.
func databaseUnavailable(err error) bool {
	var ce *pgconn.ConnectError
	var pg *pgconn.PgError
	var oe *net.OpError
	switch {
	case errors.As(err, &ce), errors.As(err, &oe), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, pgconn.ErrConnClosed):
		return true
	case errors.As(err, &pg):
		return unavailableCode(pg.Code)
	}
	return false
}

// unavailableCode reports whether a PostgreSQL error code is one of
// databaseUnavailable's.
func unavailableCode(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", sqlstateReadOnly:
		return true
	}
	return strings.HasPrefix(code, "08")
}

// sqlstateReadOnly is read_only_sql_transaction: a write on a server that
// takes none now.
const sqlstateReadOnly = "25006"

// WriteProblem writes err as RFC 9457 application/problem+json, mapped by
// ProblemFor with the default profile, for code that has no Engine (a
// webhook receiver). Generated handlers use Engine.WriteError, which
// follows the operation's profile and Config.Errors. Errors that map to a
// 5xx are logged with log/slog, since their text is not sent.
func WriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	var e *Engine
	e.WriteError(w, r, ProfileDefault, err)
}

func isProblem(err error) bool {
	var p *idemproblem.Problem
	return errors.As(err, &p)
}

// hiddenCause reports whether err, answered with status, has a cause the
// client does not see and the engine must report: a 5xx from an error that
// is not a *Problem, or from a *Problem that carries its cause in Err (a
// misconfiguration such as PrincipalScope's). A *Problem without Err says
// all there is to say.
func hiddenCause(err error, status int) bool {
	if err == nil || status < 500 {
		return false
	}
	var p *idemproblem.Problem
	return !errors.As(err, &p) || p.Err != nil
}

// writeProblem writes p as problem+json under the default profile: the
// answers that precede any operation (Routed, NotFound) have neither an
// operation's profile nor an Engine's Config.Errors.
func writeProblem(w http.ResponseWriter, p *idemproblem.Problem) {
	writeRefusal(w, renderProblem(p), p, ProfileDefault)
}
