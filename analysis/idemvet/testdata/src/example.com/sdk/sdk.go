// Package sdk stands for a payment provider's SDK.
package sdk

import "context"

type Client struct{}

// Refund refunds amount; key, when not empty, makes it idempotent.
func (c *Client) Refund(ctx context.Context, key string, amount int64) error { return nil }

// DownstreamKey derives a key for a downstream call from the request's.
func DownstreamKey(ctx context.Context, name string) string { return name }
