package idem

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxEchoBytes bounds a value from a request that the engine echoes into a
// log line or an error text: a tenant (valid ones are never longer), a
// parameter name.
const maxEchoBytes = MaxTenantBytes

// clip is the one way the engine echoes a request-derived value into a log
// line or an error text: s as it is when it is at most maxEchoBytes long,
// else its first bytes (cut at a character boundary) and its length, so that
// a client cannot make one log line as long as its request.
func clip(s string) string {
	if len(s) <= maxEchoBytes {
		return s
	}
	n := maxEchoBytes - 32
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Logging, audit and the per-request report. Every line the engine logs
// names the operation, the outcome, the key's hash and the attempt; none
// holds a raw key, a body or a header value.

func (e *Engine) logger() *slog.Logger {
	if e.cfg.Logger != nil {
		return e.cfg.Logger
	}
	return slog.Default()
}

// levelOf is the level of a request's log line: every request at Info (so
// that slog's default handler shows one line per request), what an
// operator should see at Warn (refused reuse of a key, a lost lease, an
// unknown outcome) and internal errors at Error. A service that wants
// fewer lines sets its handler's level to Warn.
func levelOf(label string) slog.Level {
	switch label {
	case "conflict", "lease_lost", "unknown", "expired_rejected", "schema_changed", "failed_retryable":
		return slog.LevelWarn
	case "failed":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// report completes rq.outcome once the response is written: the record's
// identity and the request's duration, and it logs and audits the request.
// The key hash is computed only when someone reads it.
func (e *Engine) report(ctx context.Context, rq *request) {
	o := &rq.outcome
	o.Duration = time.Since(rq.start)
	o.Attempt, o.Fence, o.Expired, o.StoredAt, o.Bytes = rq.attempt, rq.fence, rq.expired && rq.attempt > 0, rq.storedAt, rq.bytes
	o.Cache, o.Raced = rq.cache.result, rq.raced
	label := o.Label()
	level := levelOf(label)
	// An error the client saw only as a 5xx is logged with its cause, at
	// Error, whatever became of the key.
	internal := hiddenCause(o.Err, o.Status)
	if internal {
		level = slog.LevelError
	}
	// A hang-up is no server fault, but the handler's error says what it
	// was doing (hints.go).
	withErr := internal || errors.Is(o.Err, ErrClientGone)
	l := e.logger()
	logging := l.Enabled(ctx, level)
	audit := e.cfg.Hooks.OnAudit != nil && (label == "replayed" || label == "conflict")
	if rq.key.Value != "" && (logging || audit || e.cfg.Hooks.OnOutcome != nil || len(e.cfg.Observers) > 0) {
		o.Tenant, o.KeyHash = rq.key.Tenant, rq.hash()
	}
	if logging {
		attrs := append(rq.attrs(label), slog.Int("status", o.Status), slog.Duration("duration", o.Duration))
		if withErr {
			attrs = append(attrs, slog.Any("error", o.Err))
		}
		l.LogAttrs(ctx, level, "idem: request", attrs...)
	}
	if audit {
		e.cfg.Hooks.OnAudit(ctx, Audit{
			Kind: AuditKind(label), Time: time.Now(), Tenant: o.Tenant, Operation: rq.op.ID,
			KeyHash: o.KeyHash, RemoteAddr: rq.r.RemoteAddr, Status: o.Status, StoredAt: o.StoredAt,
			Method: rq.r.Method, Path: rq.r.URL.Path,
		})
	}
}

// hash is rq's key's hash (Key.Hash), made once: from the record id when
// rq has it (serve makes rq.ref from rq.key; the hash is the id's first 8
// bytes), without hashing again.
func (rq *request) hash() string {
	if rq.keyHash == "" {
		if rq.ref.id.Valid {
			rq.keyHash = hex.EncodeToString(rq.ref.id.Bytes[:8])
		} else {
			rq.keyHash = rq.key.Hash()
		}
	}
	return rq.keyHash
}

// attrs are the attributes every log line about rq carries.
func (rq *request) attrs(label string) []slog.Attr {
	a := make([]slog.Attr, 0, 8)
	a = append(a, slog.String("operation", rq.op.ID), slog.String("outcome", label))
	if rq.key.Value != "" {
		a = append(a, slog.String("key_hash", rq.hash()))
		if rq.key.Tenant != "" {
			a = append(a, slog.String("tenant", clip(rq.key.Tenant)))
		}
	}
	return append(a, slog.Int("attempt", rq.attempt))
}

// reportError hands err, which the client does not see in full, to
// Hooks.OnError, or else logs it at Error with rq's attributes.
func (e *Engine) reportError(ctx context.Context, rq *request, err error) {
	if h := e.cfg.Hooks.OnError; h != nil {
		h(ctx, rq.op, err)
		return
	}
	e.logger().LogAttrs(ctx, slog.LevelError, "idem: error", append(rq.attrs("failed"), slog.Any("error", err))...)
}

// AuditKind is what an Audit record reports.
type AuditKind string

// Audit kinds.
const (
	// AuditReplay: a stored response was sent again (stored-response access).
	AuditReplay AuditKind = "replayed"
	// AuditConflict: a key was reused with another request and refused.
	AuditConflict AuditKind = "conflict"
)

// Audit records one access to a stored response, or one refused reuse of a
// key, for Hooks.OnAudit. It never holds the key itself.
type Audit struct {
	Kind       AuditKind
	Time       time.Time
	Tenant     string
	Operation  string
	KeyHash    string // Key.Hash
	RemoteAddr string // http.Request.RemoteAddr: put a trusted proxy's client address there first
	Method     string
	Path       string
	Status     int       // the status sent: the stored one for a replay, 409 or 422 for a conflict
	StoredAt   time.Time // replays: when the response was stored
}
