package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Exchange is one request and its response.
type Exchange struct {
	Method string
	Path   string
	Key    string // Idempotency-Key sent; "" when none
	Body   []byte // request body

	Status   int
	Header   http.Header
	RespBody []byte
}

// Problem is the part of an RFC 9457 problem+json body the contract fixes.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Problem decodes the response as problem+json; ok is false when it is not one.
func (e *Exchange) Problem() (p Problem, ok bool) {
	if !strings.HasPrefix(e.Header.Get("Content-Type"), "application/problem+json") {
		return p, false
	}
	return p, json.Unmarshal(e.RespBody, &p) == nil
}

// Replayed reports whether the response is a replay.
func (e *Exchange) Replayed() bool { return e.Header.Get("Idempotent-Replayed") == "true" }

// Decode decodes the response body into v.
func (e *Exchange) Decode(v any) error { return json.Unmarshal(e.RespBody, v) }

// Client sends requests to the service.
type Client struct {
	URL  string
	HTTP *http.Client
}

// Do sends one request. key "" sends no Idempotency-Key header; body is
// JSON-encoded unless it is a []byte or nil.
func (c *Client) Do(ctx context.Context, method, path, key string, body any) (*Exchange, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return nil, err
		}
	}
	ex := &Exchange{Method: method, Path: path, Key: key, Body: raw}
	var rd io.Reader
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ex, err
	}
	defer resp.Body.Close()
	ex.Status, ex.Header = resp.StatusCode, resp.Header
	ex.RespBody, err = io.ReadAll(resp.Body)
	return ex, err
}

// NewKey returns a random UUIDv4 idempotency key.
func NewKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// shownHeaders are the response headers Format prints.
var shownHeaders = []string{
	"Content-Type", "Idempotency-Key", "Idempotent-Replayed", "Last-Modified", "Content-Digest", "Retry-After",
}

// Format renders the exchange for a person: request line, key and body,
// then status, the idempotency headers and the body.
func (e *Exchange) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  > %s %s\n", e.Method, e.Path)
	if e.Key != "" {
		fmt.Fprintf(&b, "  > Idempotency-Key: %s\n", e.Key)
	} else {
		fmt.Fprintf(&b, "  > (no Idempotency-Key)\n")
	}
	if len(e.Body) > 0 {
		fmt.Fprintf(&b, "  > %s\n", e.Body)
	}
	if e.Status == 0 {
		fmt.Fprintf(&b, "  < (no response)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  < %d %s\n", e.Status, http.StatusText(e.Status))
	hs := append([]string(nil), shownHeaders...)
	sort.Strings(hs)
	for _, h := range hs {
		if v := e.Header.Get(h); v != "" {
			fmt.Fprintf(&b, "  < %s: %s\n", h, v)
		}
	}
	if len(e.RespBody) > 0 {
		fmt.Fprintf(&b, "  < %s\n", bytes.TrimSpace(e.RespBody))
	}
	return b.String()
}
