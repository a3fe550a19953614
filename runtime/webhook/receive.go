package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
)

// DefaultMaxBodyBytes bounds a delivery's body when ReceiverConfig leaves
// MaxBodyBytes zero.
const DefaultMaxBodyBytes = 1 << 20

// PrepareFunc decodes and validates a delivery's body and returns the
// handler that applies it. An error is the sender's fault (return an
// *idem.RequestError, e.g. from idem.InvalidRequest): a 400 problem+json and
// nothing recorded in the inbox.
type PrepareFunc func(body []byte) (events.HandlerFunc, error)

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	// DB holds the inbox; the handler's transaction is begun on it. Required.
	DB idem.DB
	// Consumer names the inbox of this receiver: deliveries are deduplicated
	// per consumer. Required.
	Consumer string
	// MaxBodyBytes bounds a delivery's body; DefaultMaxBodyBytes when zero.
	MaxBodyBytes int64
	// Verify, when set, authenticates a delivery before anything else is
	// done with it (e.g. VerifyHMAC). An error is a 401 and nothing is
	// recorded.
	Verify func(r *http.Request, body []byte) error
	// OnError is called with every error a delivery is answered with (bad
	// key, bad payload, conflict, handler error); nil ignores them.
	OnError func(r *http.Request, err error)
}

// Receiver serves webhook deliveries through the inbox. It is safe for
// concurrent use.
type Receiver struct {
	cfg ReceiverConfig
}

// NewReceiver returns a Receiver; generated NewWebhookHandler functions
// build one.
func NewReceiver(cfg ReceiverConfig) *Receiver {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return &Receiver{cfg: cfg}
}

// Delivery describes the webhook delivery being handled.
type Delivery struct {
	Scope   string // the webhook's name, e.g. "email.sent"
	Key     string // the Idempotency-Key header, parsed
	EventID string // the ce-id header, "" when absent
	Source  string // the ce-source header, "" when absent
}

type deliveryCtx struct{}

// DeliveryFromContext returns the delivery whose handler is running.
func DeliveryFromContext(ctx context.Context) (Delivery, bool) {
	d, ok := ctx.Value(deliveryCtx{}).(Delivery)
	return d, ok
}

// Receive serves one delivery of the webhook scope (its name): see the
// package documentation for the answers it gives.
func (rc *Receiver) Receive(w http.ResponseWriter, r *http.Request, scope string, prepare PrepareFunc) {
	if err := rc.receive(w, r, scope, prepare); err != nil {
		if rc.cfg.OnError != nil {
			rc.cfg.OnError(r, err)
		}
		idem.WriteProblem(w, r, err)
	}
}

func (rc *Receiver) receive(w http.ResponseWriter, r *http.Request, scope string, prepare PrepareFunc) error {
	raw := r.Header.Get(HeaderIdempotencyKey)
	if raw == "" {
		return idem.ErrKeyRequired
	}
	key, err := idem.ParseKey(raw, idem.KeyFormatOpaque)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rc.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return idem.InvalidRequest("body", err)
	}
	if rc.cfg.Verify != nil {
		if err := rc.cfg.Verify(r, body); err != nil {
			return &verifyError{err}
		}
	}
	fn, err := prepare(body)
	if err != nil {
		var re *idem.RequestError
		if !errors.As(err, &re) {
			err = idem.InvalidRequest("body", err)
		}
		return err
	}
	fp, err := idem.Fingerprint(idem.FingerprintInput{
		Method: r.Method, Pattern: scope, ContentType: r.Header.Get("Content-Type"), Body: body})
	if err != nil {
		return idem.InvalidRequest("body", err)
	}
	d := Delivery{Scope: scope, Key: key, EventID: r.Header.Get(HeaderCEID), Source: r.Header.Get(HeaderCESource)}
	msg := events.Message{Key: messageKey(d), Fingerprint: fp}
	ctx := context.WithValue(r.Context(), deliveryCtx{}, d)
	out, err := events.HandleMessage(ctx, rc.cfg.DB, rc.cfg.Consumer, msg, func(ctx context.Context, tx pgx.Tx) error {
		return fn(ctx, tx)
	})
	switch out {
	case events.Processed:
		w.WriteHeader(http.StatusNoContent)
		return nil
	case events.Duplicate:
		w.Header().Set(HeaderReplayed, "true")
		w.WriteHeader(http.StatusNoContent)
		return nil
	case events.Conflict:
		return &conflictError{err}
	}
	if err == nil {
		err = errors.New("webhook: inbox: no outcome")
	}
	return err
}

// messageKey is the inbox key of a delivery: scope, key and, when present,
// the CloudEvents source and id, length-prefixed so no two differ only in
// where one part ends.
func messageKey(d Delivery) string {
	b := make([]byte, 0, len(d.Scope)+len(d.Key)+len(d.Source)+len(d.EventID)+16)
	for _, s := range []string{d.Scope, d.Key, d.Source, d.EventID} {
		b = appendLen(b, len(s))
		b = append(b, s...)
	}
	return string(b)
}

func appendLen(b []byte, n int) []byte {
	if n == 0 {
		return append(b, '0', ':')
	}
	var d [20]byte
	i := len(d)
	for n > 0 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(append(b, d[i:]...), ':')
}

// conflictError maps an inbox conflict to the HTTP contract's 409.
type conflictError struct{ err error }

func (e *conflictError) Error() string { return e.err.Error() }
func (e *conflictError) Unwrap() []error {
	return []error{e.err, idem.ErrFingerprintMismatch}
}

type verifyError struct{ err error }

func (e *verifyError) Error() string   { return "webhook: verify: " + e.err.Error() }
func (e *verifyError) Unwrap() []error { return []error{e.err, idem.ErrUnauthenticated} }

// Receive serves one delivery with a one-off Receiver whose handler gets
// the raw body: for hand-written receivers. Generated code uses a Receiver.
func Receive(w http.ResponseWriter, r *http.Request, db idem.DB, consumer string, maxBody int64,
	fn func(ctx context.Context, tx pgx.Tx, body []byte) error) {
	rc := NewReceiver(ReceiverConfig{DB: db, Consumer: consumer, MaxBodyBytes: maxBody})
	rc.Receive(w, r, r.URL.Path, func(body []byte) (events.HandlerFunc, error) {
		return func(ctx context.Context, tx pgx.Tx) error { return fn(ctx, tx, body) }, nil
	})
}
