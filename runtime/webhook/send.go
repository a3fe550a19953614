package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Send enqueues a webhook in tx: a CloudEvent of type typ and source source
// whose data is payload encoded as JSON. Inside an idempotent request its id
// and "idempotencykey" extension come from the request's key (see
// events.Enqueue) and the request's tenant is recorded in ExtensionTenant.
// Generated Send<Webhook> functions call it.
func Send(ctx context.Context, tx pgx.Tx, source, typ string, payload any, opts ...events.Option) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("webhook: send %s: encode payload: %w", typ, err)
	}
	ev := cloudevents.New()
	ev.SetType(typ)
	ev.SetSource(source)
	if err := ev.SetData("application/json", data); err != nil {
		return fmt.Errorf("webhook: send %s: %w", typ, err)
	}
	if key, ok := idem.KeyFromContext(ctx); ok && key.Tenant != "" {
		ev.SetExtension(ExtensionTenant, key.Tenant)
	}
	return events.Enqueue(ctx, tx, ev, opts...)
}

// Tenant returns the tenant Send recorded on ev, or "".
func Tenant(ev cloudevents.Event) string {
	s, _ := ev.Extensions()[ExtensionTenant].(string)
	return s
}

// PublisherConfig configures an HTTPPublisher.
type PublisherConfig struct {
	// Target returns the URL an event is POSTed to, e.g. by ev.Type() and
	// Tenant(ev). An error is retried unless marked with events.Permanent;
	// an empty URL is a permanent error. Required.
	Target func(ctx context.Context, ev cloudevents.Event) (string, error)
	// Client sends the requests; nil means a client with a 5s timeout. Keep
	// the timeout short: the relay holds the batch's row locks meanwhile.
	Client *http.Client
	// Sign, when set, is called with each request and its body before it is
	// sent, e.g. SignHMAC.
	Sign func(req *http.Request, body []byte) error
	// UserAgent is sent as User-Agent; "idemgen-webhook" by default.
	UserAgent string
}

// HTTPPublisher is an events.Publisher that delivers events as webhooks.
type HTTPPublisher struct {
	cfg PublisherConfig
}

var _ events.Publisher = (*HTTPPublisher)(nil)

// NewHTTPPublisher returns a publisher for events.NewRelay.
func NewHTTPPublisher(cfg PublisherConfig) *HTTPPublisher {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "idemgen-webhook"
	}
	return &HTTPPublisher{cfg: cfg}
}

// StatusError is a delivery the receiver answered with a non-2xx status.
type StatusError struct {
	URL    string
	Status int
	Body   string // the start of the response body
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("webhook: POST %s: %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// DeliveryKey returns the Idempotency-Key an event is delivered with: its
// "idempotencykey" extension, or its id when it has none.
func DeliveryKey(ev cloudevents.Event) string {
	if k, ok := ev.Extensions()[events.ExtensionIdempotencyKey].(string); ok && k != "" {
		return k
	}
	return ev.ID()
}

// Publish POSTs ev. It returns nil for a 2xx answer, an events.Permanent
// *StatusError for a 4xx other than 408 and 429, and a retryable error
// otherwise.
func (p *HTTPPublisher) Publish(ctx context.Context, ev cloudevents.Event) error {
	if p.cfg.Target == nil {
		return events.Permanent(errors.New("webhook: PublisherConfig.Target is nil"))
	}
	url, err := p.cfg.Target(ctx, ev)
	if err != nil {
		return fmt.Errorf("webhook: target of %s %s: %w", ev.Type(), ev.ID(), err)
	}
	if url == "" {
		return events.Permanent(fmt.Errorf("webhook: no target for %s %s", ev.Type(), ev.ID()))
	}
	body := ev.Data()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return events.Permanent(fmt.Errorf("webhook: %s %s: %w", ev.Type(), ev.ID(), err))
	}
	h := req.Header
	ct := ev.DataContentType()
	if ct == "" {
		ct = "application/json"
	}
	h.Set("Content-Type", ct)
	h.Set("User-Agent", p.cfg.UserAgent)
	h.Set(HeaderIdempotencyKey, DeliveryKey(ev))
	h.Set(HeaderCEID, ev.ID())
	h.Set(HeaderCEType, ev.Type())
	h.Set(HeaderCESource, ev.Source())
	h.Set(HeaderCESpecVersion, ev.SpecVersion())
	if t := ev.Time(); !t.IsZero() {
		h.Set(HeaderCETime, t.UTC().Format(time.RFC3339Nano))
	}
	if s := ev.Subject(); s != "" {
		h.Set(HeaderCESubject, s)
	}
	if p.cfg.Sign != nil {
		if err := p.cfg.Sign(req, body); err != nil {
			return fmt.Errorf("webhook: sign %s %s: %w", ev.Type(), ev.ID(), err)
		}
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %s %s: %w", ev.Type(), ev.ID(), err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	serr := &StatusError{URL: url, Status: resp.StatusCode, Body: strings.TrimSpace(string(snippet))}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 &&
		resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return events.Permanent(serr)
	}
	return serr
}

// Standard Webhooks (https://www.standardwebhooks.com) signature headers, as
// SignHMAC writes and VerifyHMAC checks them.
const (
	HeaderSignatureID        = "Webhook-Id"
	HeaderSignatureTimestamp = "Webhook-Timestamp"
	HeaderSignature          = "Webhook-Signature"
)

// SignHMAC returns a PublisherConfig.Sign hook that signs each delivery as
// Standard Webhooks do: Webhook-Id (the ce-id), Webhook-Timestamp (Unix
// seconds) and Webhook-Signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
func SignHMAC(secret []byte) func(req *http.Request, body []byte) error {
	return func(req *http.Request, body []byte) error {
		id := req.Header.Get(HeaderCEID)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set(HeaderSignatureID, id)
		req.Header.Set(HeaderSignatureTimestamp, ts)
		req.Header.Set(HeaderSignature, "v1,"+base64.StdEncoding.EncodeToString(mac(secret, id, ts, body)))
		return nil
	}
}

func mac(secret []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return m.Sum(nil)
}

// ErrBadSignature is wrapped by VerifyHMAC's errors.
var ErrBadSignature = errors.New("webhook signature does not verify")

// VerifyHMAC returns a ReceiverConfig.Verify hook that checks what SignHMAC
// wrote, refusing timestamps more than tolerance away from now (5 minutes
// when zero).
func VerifyHMAC(secret []byte, tolerance time.Duration) func(r *http.Request, body []byte) error {
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	return func(r *http.Request, body []byte) error {
		id, ts := r.Header.Get(HeaderSignatureID), r.Header.Get(HeaderSignatureTimestamp)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: bad %s", ErrBadSignature, HeaderSignatureTimestamp)
		}
		if d := time.Since(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: timestamp outside tolerance", ErrBadSignature)
		}
		want := mac(secret, id, ts, body)
		for _, sig := range strings.Fields(r.Header.Get(HeaderSignature)) {
			v, b64, ok := strings.Cut(sig, ",")
			if !ok || v != "v1" {
				continue
			}
			if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
		return ErrBadSignature
	}
}
