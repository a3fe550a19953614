package idemclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Do runs one call of op: it sends req, retrying as the package doc says,
// and decodes the final response with decode, which returns the declared
// response or, for one the operation does not declare, resp.Error().
//
// The error is a *Error for an undeclared final response (problem+json
// decoded), a *TransportError when no response came back, a
// *DecodeError for a declared response that does not decode, or the
// context's error (wrapped, with the call's key and attempts) when it ended
// the call during a wait.
func Do[T any](ctx context.Context, c *Client, op *Operation, req *Request, decode func(*Response) (T, error), opts ...CallOption) (*Result[T], error) {
	if c == nil || c.root == "" {
		return nil, ErrNoBaseURL
	}
	var cl call
	for _, opt := range opts {
		opt(&cl)
	}
	pol := c.retry.withDefaults()
	if cl.attempts > 0 {
		pol.MaxAttempts = cl.attempts
	}
	if cl.timeout > 0 {
		pol.AttemptTimeout = cl.timeout
	}
	key := cl.key
	if key == "" {
		key = req.Key
	}
	var site string
	if op.Idempotent && key == "" {
		var err error
		if key, site, err = derivedKey(ctx, op, cl.site); err != nil {
			return nil, err
		}
	}
	if op.Idempotent && key == "" {
		var err error
		if key, err = c.newKey(op.KeyFormat); err != nil {
			return nil, fmt.Errorf("%s: minting an idempotency key: %w", op.ID, err)
		}
	}
	// May a request that reached the server be sent again?
	safe := (op.Idempotent && key != "") || idempotentMethod[op.Method] || cl.unsafe
	if c.regions != nil && cl.region == "" {
		cl.region = c.regions.home
	}

	for n := 1; ; n++ {
		resp, err := c.attempt(ctx, op, req, key, &cl, pol.AttemptTimeout)
		if ctx.Err() != nil {
			// The caller's context ended the call, during the attempt.
			return nil, &TransportError{Operation: op.ID, Key: key, Attempts: n, Err: ctx.Err(), Unsafe: !safe}
		}
		retry, wait := false, time.Duration(0)
		moved := c.followHome(&cl, resp)
		if safe && n < pol.MaxAttempts {
			retry, wait = decideRetry(resp, err, n, pol)
			if moved && resp.Status == http.StatusMisdirectedRequest {
				retry, wait = true, 0 // sent to the wrong region: go home now
			}
		}
		if retry {
			if dl, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(dl) {
				retry = false // the wait would outlast the budget: answer now
			}
		}
		if cl.observe != nil {
			a := Attempt{Operation: op.ID, Key: key, N: n, Err: err, Retry: retry}
			if resp != nil {
				a.Status = resp.Status
			}
			if retry {
				a.Wait = wait
			}
			cl.observe(a)
		}
		if !retry {
			if err != nil {
				return nil, &TransportError{Operation: op.ID, Key: key, Attempts: n, Err: err, Unsafe: !safe}
			}
			resp.Attempts, resp.KeySite = n, site
			out, derr := decode(resp)
			if derr != nil {
				return nil, derr
			}
			return &Result[T]{Response: out, Status: resp.Status, Header: resp.Header, Key: key, KeySite: site, Attempts: n,
				Replayed: resp.Header.Get("Idempotent-Replayed") == "true", HomeRegion: resp.Header.Get(HomeRegionHeader)}, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &TransportError{Operation: op.ID, Key: key, Attempts: n, Err: ctx.Err(), Unsafe: !safe}
		case <-t.C:
		}
	}
}

// idempotentMethod are the methods HTTP defines as idempotent (RFC 9110
// 9.2.2): a retry of one is safe without a key.
var idempotentMethod = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPut: true, http.MethodDelete: true, http.MethodOptions: true,
}

// attempt sends the request once and reads the whole response.
func (c *Client) attempt(ctx context.Context, op *Operation, req *Request, key string, cl *call, timeout time.Duration) (*Response, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	u := c.rootFor(cl.region) + req.Path
	if len(req.Query) > 0 {
		u += "?" + req.Query.Encode()
	}
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, op.Method, u, body)
	if err != nil {
		return nil, &requestEditorError{err}
	}
	for k, vs := range req.Header {
		hr.Header[k] = append([]string(nil), vs...)
	}
	for k, vs := range cl.header {
		hr.Header[k] = append(hr.Header[k], vs...)
	}
	if req.Body != nil && req.ContentType != "" {
		hr.Header.Set("Content-Type", req.ContentType)
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", "application/json, application/problem+json;q=0.9, */*;q=0.8")
	}
	if c.agent != "" {
		hr.Header.Set("User-Agent", c.agent)
	}
	if key != "" && op.KeyHeader != "" {
		hr.Header.Set(op.KeyHeader, key)
	}
	for _, edit := range c.editors {
		if err := edit(hr); err != nil {
			return nil, &requestEditorError{fmt.Errorf("request editor: %w", err)}
		}
	}
	res, err := c.http.Do(hr)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		// The status came, the body did not: the outcome is unknown, as
		// after any transport error.
		return nil, fmt.Errorf("reading the %d response: %w", res.StatusCode, err)
	}
	return &Response{Operation: op.ID, Status: res.StatusCode, Header: res.Header, Body: b, Key: key}, nil
}

// decideRetry says whether the outcome of attempt n may be retried and
// after how long. Only called for calls that are safe to send again.
func decideRetry(resp *Response, err error, n int, pol RetryPolicy) (bool, time.Duration) {
	if err != nil {
		var rerr *requestEditorError
		if errors.As(err, &rerr) {
			return false, 0
		}
		return true, backoff(n, pol)
	}
	switch s := resp.Status; {
	case s == http.StatusConflict:
		p := problemOf(resp)
		if p == nil || (p.Reason != idemproblem.ReasonInProgress && p.Reason != idemproblem.ReasonLeaseLost) {
			return false, 0
		}
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
	case s == http.StatusNotImplemented, s == http.StatusHTTPVersionNotSupported:
		return false, 0
	case s >= 500:
	default:
		return false, 0
	}
	if ra, ok := ParseRetryAfter(resp.Header); ok {
		if ra > pol.MaxRetryAfter {
			return false, 0
		}
		// Honour it, with a little jitter so that duplicates told the same
		// second do not all come back at once.
		return true, ra + rand.N(ra/10+time.Millisecond)
	}
	return true, backoff(n, pol)
}

// requestEditorError is an attempt that failed before sending anything and
// would fail the same way again: a request that cannot be built, or a
// request editor's error.
type requestEditorError struct{ error }

func (e *requestEditorError) Unwrap() error { return e.error }

// backoff is the wait after attempt n: InitialBackoff doubling per attempt,
// capped at MaxBackoff, of which a random half is waited ("equal jitter").
func backoff(n int, pol RetryPolicy) time.Duration {
	d := pol.InitialBackoff
	for i := 1; i < n && d < pol.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, pol.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// ParseRetryAfter reads Retry-After: delay seconds or an HTTP date; ok is
// false when the header is absent or unreadable.
func ParseRetryAfter(h http.Header) (d time.Duration, ok bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
