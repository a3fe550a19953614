package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Label is what the carrier books for a shipment.
type Label struct {
	TrackingNumber string `json:"trackingNumber"`
}

// Carrier is the client of the shipping carrier's API: another service,
// outside our transaction, which deduplicates bookings by key (as payment
// gateways and carriers do).
type Carrier struct {
	URL  string
	HTTP *http.Client
}

// Book books a label for key; booking a key again returns its label.
func (c *Carrier) Book(ctx context.Context, key, address string) (Label, error) {
	body, err := json.Marshal(map[string]string{"key": key, "address": address})
	if err != nil {
		return Label{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/labels", bytes.NewReader(body))
	if err != nil {
		return Label{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	var l Label
	ok, err := c.do(req, &l)
	if err == nil && !ok {
		err = fmt.Errorf("carrier: book %s: not found", key)
	}
	return l, err
}

// Lookup returns the label booked for key, if any.
func (c *Carrier) Lookup(ctx context.Context, key string) (Label, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/labels?key="+url.QueryEscape(key), nil)
	if err != nil {
		return Label{}, false, err
	}
	var l Label
	ok, err := c.do(req, &l)
	return l, ok, err
}

// do sends req and decodes a 200 or 201 into v; a 404 is (false, nil).
func (c *Carrier) do(req *http.Request, v any) (bool, error) {
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return false, fmt.Errorf("carrier: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated:
		return true, json.NewDecoder(resp.Body).Decode(v)
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("carrier: %s %s: %s", req.Method, req.URL.Path, resp.Status)
}
