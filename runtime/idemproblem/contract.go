package idemproblem

// The vocabulary of idemgen's HTTP contract: the code and reason members
// of a refusal's problem+json (Problem.Code, Problem.Reason). The engine
// chooses them (idem.ProblemFor, under an operation's profile); a client
// reads them (runtime/idemclient); both take them from here. docs/errors.md
// lists them with their statuses.

// Codes: the status class of a refusal and what it says about the request,
// ERRnnn_... (a profile may answer a reason with another status, and then
// with that status's code).
const (
	CodeMalformedHeader  = "ERR400_MISSING_OR_MALFORMED_HEADER"
	CodeInvalidRequest   = "ERR400_INVALID_REQUEST"
	CodeUnauthorized     = "ERR401_UNAUTHORIZED"
	CodeForbidden        = "ERR403_FORBIDDEN"
	CodeNotFound         = "ERR404_NOT_FOUND"
	CodeMethodNotAllowed = "ERR405_METHOD_NOT_ALLOWED"
	CodeRequestTimeout   = "ERR408_REQUEST_TIMEOUT"
	CodeConflict         = "ERR409_SERVER_STATE_CONFLICT"
	CodeTooLarge         = "ERR413_CONTENT_TOO_LARGE"
	CodeMediaType        = "ERR415_UNSUPPORTED_MEDIA_TYPE"
	CodeMisdirected      = "ERR421_MISDIRECTED_REQUEST"
	CodeUnprocessable    = "ERR422_UNPROCESSABLE_CONTENT"
	CodeTooManyRequests  = "ERR429_TOO_MANY_REQUESTS"
	// CodeClientClosed (and ReasonClientClosed) are logged and counted,
	// never read: the answer to a request whose client went away (499, as
	// nginx logs it).
	CodeClientClosed   = "ERR499_CLIENT_CLOSED_REQUEST"
	CodeInternal       = "ERR500_INTERNAL_SERVER_ERROR"
	CodeNotImplemented = "ERR501_NOT_IMPLEMENTED"
	CodeUnavailable    = "ERR503_SERVICE_UNAVAILABLE"
)

// Reasons: why a request was refused, the member a client acts on.
const (
	// The idempotency key.
	ReasonKeyRequired    = "IDEMPOTENCY_KEY_REQUIRED"
	ReasonKeyMalformed   = "IDEMPOTENCY_KEY_MALFORMED"
	ReasonConflict       = "CONFLICTING_IDEMPOTENT_REQUEST"
	ReasonInProgress     = "IDEMPOTENT_REQUEST_IN_PROGRESS"
	ReasonSchemaChanged  = "STORED_RESPONSE_SCHEMA_CHANGED"
	ReasonExpired        = "IDEMPOTENCY_KEY_EXPIRED"
	ReasonLeaseLost      = "IDEMPOTENCY_LEASE_LOST"
	ReasonOutcomeUnknown = "IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN"
	// ReasonWrongRegion: the key's home is another region (421, with the
	// region named in the Idempotency-Home-Region header).
	ReasonWrongRegion = "IDEMPOTENCY_KEY_HOME_REGION"

	// The request.
	ReasonBodyTooLarge    = "REQUEST_BODY_TOO_LARGE"
	ReasonBodyUnreadable  = "REQUEST_BODY_UNREADABLE"
	ReasonInvalidJSON     = "REQUEST_BODY_INVALID_JSON"
	ReasonInvalidRequest  = "REQUEST_INVALID"
	ReasonMediaType       = "UNSUPPORTED_MEDIA_TYPE"
	ReasonUnauthenticated = "UNAUTHENTICATED"
	ReasonForbidden       = "FORBIDDEN"
	// ReasonNoOperation and ReasonMethod answer a request that matches no
	// operation: no operation has its path (404), or none its method on
	// that path (405).
	ReasonNoOperation = "NO_SUCH_OPERATION"
	ReasonMethod      = "METHOD_NOT_ALLOWED"

	// The server.
	ReasonInternal       = "INTERNAL_ERROR"
	ReasonNotImplemented = "NOT_IMPLEMENTED"
	ReasonDatabaseDown   = "DATABASE_UNAVAILABLE"
	ReasonClientClosed   = "CLIENT_CLOSED_REQUEST"
)
