package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Exchange is one request and what came back, as reported in the evidence.
type Exchange struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// Key is the key header as sent: absent (""), bare, quoted, or
	// several values joined by ", " when the header was repeated.
	Key         string            `json:"key,omitempty"`
	Tenant      string            `json:"tenant,omitempty"`
	RequestBody string            `json:"requestBody,omitempty"`
	Status      int               `json:"status,omitempty"`
	Header      map[string]string `json:"header,omitempty"` // the contract's response headers
	Body        string            `json:"body,omitempty"`   // at most 2 KiB
	Error       string            `json:"error,omitempty"`
	// Earlier are the answers to the earlier attempts of the same request
	// (the same key and body), oldest first: answers the contract says to
	// retry (in flight, lease lost, outcome unknown, 503, no response...),
	// which a check retries before it judges this, the last one.
	Earlier []Exchange `json:"earlier,omitempty"`

	resp    http.Header
	raw     []byte // the whole response body
	reqBody []byte
	// profile reads refusals (idem.Profile.ReadError): the profile of the
	// operation the exchange was for.
	profile idem.Profile
}

// reportedHeaders are the response headers an Exchange records.
var reportedHeaders = []string{"Content-Type", "Content-Digest", "Idempotent-Replayed", "Last-Modified", "Date", "Retry-After"}

const maxShown = 2048

func shown(b []byte) string {
	if len(b) > maxShown {
		b = b[:maxShown]
		for !utf8.Valid(b) && len(b) > 0 {
			b = b[:len(b)-1]
		}
		return string(b) + "…"
	}
	return string(b)
}

// request is one request to send.
type request struct {
	method string
	path   string // expanded, without the base URL
	query  url.Values
	header http.Header
	body   []byte
	ctype  string
	keys   []string // values of the key header; none: no header
	tenant string
	notes  []string // what the evidence must say of how it was built (a generated id)
}

func (q request) withKeys(keys ...string) request {
	q.keys = keys
	return q
}

func (q request) withBody(b []byte) request {
	q.body = b
	return q
}

func (q request) withTenant(t string) request {
	q.tenant = t
	return q
}

// send performs one request. A transport error is recorded in the Exchange
// (Status 0), not returned: it is evidence too.
func (r *runner) send(ctx context.Context, keyHeader string, q request) *Exchange {
	u := r.base + q.path
	if len(q.query) > 0 {
		u += "?" + q.query.Encode()
	}
	ex := &Exchange{Method: q.method, URL: u, Key: strings.Join(q.keys, ", "), Tenant: q.tenant,
		RequestBody: shown(q.body), reqBody: q.body}
	var body io.Reader
	if q.body != nil {
		body = bytes.NewReader(q.body)
	}
	req, err := http.NewRequestWithContext(ctx, q.method, u, body)
	if err != nil {
		ex.Error = err.Error()
		return ex
	}
	for k, vs := range r.cfg.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	for k, vs := range q.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if q.body != nil && q.ctype != "" {
		req.Header.Set("Content-Type", q.ctype)
	}
	if keyHeader != "" {
		req.Header.Del(keyHeader)
		for _, k := range q.keys {
			req.Header.Add(keyHeader, k)
		}
	}
	if r.cfg.TenantHeader != "" {
		t := q.tenant
		if t == "" {
			t = r.cfg.Tenants[0]
		}
		req.Header.Set(r.cfg.TenantHeader, t)
		ex.Tenant = t
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		ex.Error = err.Error()
		return ex
	}
	defer resp.Body.Close()
	ex.raw, err = io.ReadAll(resp.Body)
	if err != nil {
		ex.Error = "reading the response: " + err.Error()
	}
	ex.Status, ex.resp, ex.Body = resp.StatusCode, resp.Header, shown(ex.raw)
	ex.Header = map[string]string{}
	for _, h := range append([]string{keyHeader}, reportedHeaders...) {
		if v := resp.Header.Values(h); len(v) > 0 && h != "" {
			ex.Header[http.CanonicalHeaderKey(h)] = strings.Join(v, ", ")
		}
	}
	return ex
}

func (e *Exchange) header(name string) string {
	if e.resp == nil {
		return ""
	}
	return e.resp.Get(name)
}

func (e *Exchange) replayed() bool { return e.header("Idempotent-Replayed") == "true" }

// refusal reads the response as a refusal of the exchange's profile
// (problem+json, or Stripe's envelope); ok is false when it is not one.
func (e *Exchange) refusal() (*idemproblem.Problem, bool) {
	p := e.profile
	if p == "" {
		p = idem.ProfileDefault
	}
	return p.ReadError(e.Status, e.resp, e.raw)
}

// retryAfter is the Retry-After delay; ok is false when the header is
// absent or unreadable.
func (e *Exchange) retryAfter() (time.Duration, bool) { return idemclient.ParseRetryAfter(e.resp) }

// describe is a short account of the response for evidence lines: the
// status, the problem's reason, and for a refusal that is not one of the
// contract's (a business rule's 409 or 422, a validation error) what the
// service said, so that the plain-text report shows why.
func (e *Exchange) describe() string {
	if e.Status == 0 {
		return "no response (" + e.Error + ")"
	}
	s := strconv.Itoa(e.Status)
	p, isRefusal := e.refusal()
	var why string
	if e.Status >= 400 && (!isRefusal || !contractReasons[p.Reason]) {
		why = e.said(p)
	}
	switch {
	case isRefusal && p.Reason != "":
		s += " " + p.Reason
	case isRefusal && why == "":
		s += " refusal without a reason"
	}
	if e.replayed() {
		s += " (Idempotent-Replayed: true)"
	}
	if why != "" {
		s += ": " + why
	}
	if n := e.attempts(); n > 1 {
		s += " after " + plural(n, "attempt")
	}
	return s
}

// contractReasons are the reasons of the idempotency contract's own
// answers, which the checks expect and which need no more words.
var contractReasons = map[string]bool{
	idemproblem.ReasonKeyRequired: true, idemproblem.ReasonKeyMalformed: true, idemproblem.ReasonConflict: true,
	idemproblem.ReasonInProgress: true,
}

// maxSaid bounds what describe quotes of a response body.
const maxSaid = 300

// said is what the response body says, on one line: a refusal's detail
// (else its title), or the body itself when it is text and not a refusal
// of the profile; "" for nothing readable.
func (e *Exchange) said(p *idemproblem.Problem) string {
	var s string
	if p != nil {
		s = p.Detail
		if s == "" {
			s = p.Title
		}
	} else if utf8.Valid(e.raw) {
		s = string(e.raw)
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxSaid {
		s = s[:maxSaid]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// wantRefusal checks that e is the refusal err stands for under the
// exchange's profile (idem.ProblemFor: the status, the reason and, for
// problem+json, the code); "" when it is, else what differs.
func wantRefusal(e *Exchange, err error) string {
	if e.Status == 0 {
		return "no response: " + e.Error
	}
	profile := e.profile
	if profile == "" {
		profile = idem.ProfileDefault
	}
	want := idem.ProblemFor(err, profile)
	p, ok := e.refusal()
	body := idem.Profile(profile).ErrorBody()
	switch {
	case e.Status != want.Status:
		return fmt.Sprintf("want %d %s, got %s", want.Status, want.Reason, e.describe())
	case !ok:
		return fmt.Sprintf("want a refusal in profile %s's body (%s), got Content-Type %q: %s", profile, body.MediaType, e.header("Content-Type"), shown(e.raw))
	case p.Reason != want.Reason || (profile != idem.ProfileStripe && p.Code != want.Code):
		if profile == idem.ProfileStripe {
			return fmt.Sprintf("want reason %s, got %q", want.Reason, p.Reason)
		}
		return fmt.Sprintf("want code %s and reason %s, got %q and %q", want.Code, want.Reason, p.Code, p.Reason)
	}
	return ""
}
