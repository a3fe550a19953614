package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Handler serves the simulator over HTTP:
//
//	POST /charges          {"key","amount","currency"} -> 200 Charge
//	                       503 unavailable, 504 timeout, 409 key reused, 400 invalid
//	GET  /charges/{key}    200 Charge, 404 when nothing was charged under key
//	GET  /charges          200 {"charges":[...],"stats":{...}}
//	GET  /switches         200 Switches
//	PUT  /switches         Switches -> 204
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", func(w http.ResponseWriter, r *http.Request) {
		var req chargeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		ch, err := s.Charge(r.Context(), req.Key, req.Amount, req.Currency)
		if err != nil {
			writeError(w, statusOf(err), err)
			return
		}
		writeJSON(w, http.StatusOK, ch)
	})
	mux.HandleFunc("GET /charges/{key}", func(w http.ResponseWriter, r *http.Request) {
		ch, ok, err := s.Lookup(r.Context(), r.PathValue("key"))
		switch {
		case err != nil:
			writeError(w, statusOf(err), err)
		case !ok:
			writeError(w, http.StatusNotFound, errors.New("no charge under this key"))
		default:
			writeJSON(w, http.StatusOK, ch)
		}
	})
	mux.HandleFunc("GET /charges", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, chargeList{Charges: s.Charges(), Stats: s.Stats()})
	})
	mux.HandleFunc("GET /switches", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Switches())
	})
	mux.HandleFunc("PUT /switches", func(w http.ResponseWriter, r *http.Request) {
		var sw Switches
		if err := json.NewDecoder(r.Body).Decode(&sw); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		s.Set(sw)
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

type chargeRequest struct {
	Key      string `json:"key"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

type chargeList struct {
	Charges []Charge `json:"charges"`
	Stats   Stats    `json:"stats"`
}

type errorBody struct {
	Error string `json:"error"`
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrKeyReused):
		return http.StatusConflict
	case errors.Is(err, ErrTimeout):
		return http.StatusGatewayTimeout
	default:
		return http.StatusServiceUnavailable
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, errorBody{Error: err.Error()})
}

// Client calls a gateway served by Handler. It implements Gateway.
type Client struct {
	base string
	hc   *http.Client
}

var _ Gateway = (*Client)(nil)

// NewClient returns a client of the gateway at baseURL (e.g.
// "http://127.0.0.1:9000"). A nil hc means a client with a 10s timeout.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// Charge implements Gateway. A transport error after the request was sent is
// reported as ErrTimeout: the charge may have happened.
func (c *Client) Charge(ctx context.Context, key string, amount int64, currency string) (Charge, error) {
	body, _ := json.Marshal(chargeRequest{Key: key, Amount: amount, Currency: currency})
	var ch Charge
	status, err := c.do(ctx, http.MethodPost, "/charges", body, &ch)
	if err != nil {
		return Charge{}, fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	if status != http.StatusOK {
		return Charge{}, errorFor(status)
	}
	return ch, nil
}

// Lookup implements Gateway.
func (c *Client) Lookup(ctx context.Context, key string) (Charge, bool, error) {
	var ch Charge
	status, err := c.do(ctx, http.MethodGet, "/charges/"+url.PathEscape(key), nil, &ch)
	switch {
	case err != nil:
		return Charge{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case status == http.StatusNotFound:
		return Charge{}, false, nil
	case status != http.StatusOK:
		return Charge{}, false, errorFor(status)
	}
	return ch, true, nil
}

// Charges returns every charge, oldest first, and the gateway's totals.
func (c *Client) Charges(ctx context.Context) ([]Charge, Stats, error) {
	var list chargeList
	status, err := c.do(ctx, http.MethodGet, "/charges", nil, &list)
	if err == nil && status != http.StatusOK {
		err = errorFor(status)
	}
	return list.Charges, list.Stats, err
}

// Set replaces the gateway's switches.
func (c *Client) Set(ctx context.Context, sw Switches) error {
	body, _ := json.Marshal(sw)
	status, err := c.do(ctx, http.MethodPut, "/switches", body, nil)
	if err == nil && status != http.StatusNoContent {
		err = errorFor(status)
	}
	return err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return 0, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func errorFor(status int) error {
	switch status {
	case http.StatusBadRequest:
		return ErrInvalid
	case http.StatusConflict:
		return ErrKeyReused
	case http.StatusGatewayTimeout:
		return ErrTimeout
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	default:
		return fmt.Errorf("%w: status %d", ErrUnavailable, status)
	}
}
