// Package idemclient is a stub of idemgen's runtime/idemclient.
package idemclient

import "context"

type Client struct{}

type Operation struct {
	ID         string
	Method     string
	Idempotent bool
	KeyHeader  string
	KeyFormat  string
}

type Request struct {
	Path string
	Key  string
}

func NewRequest(path string) *Request { return &Request{Path: path} }

type Response struct{ Status int }

type Result[T any] struct{ Response T }

type CallOption func(*call)

type call struct{ key, site string }

func WithIdempotencyKey(key string) CallOption { return func(c *call) { c.key = key } }

func WithKeySite(name string) CallOption { return func(c *call) { c.site = name } }

func NewKey(format string) (string, error) { return format, nil }

func Format(v any) string { return "" }

func Do[T any](ctx context.Context, c *Client, op *Operation, req *Request, decode func(*Response) (T, error), opts ...CallOption) (*Result[T], error) {
	return nil, nil
}
