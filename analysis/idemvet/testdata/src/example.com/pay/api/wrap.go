package api

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemclient"
)

// Detached is a wrapper written by hand, like a generated method, that
// calls out under a context of its own.
func Detached(c *Client, amount int64, opts ...idemclient.CallOption) error { // want Detached:"idemclient call createRefund POST idempotent=true ctx=-1 opts=2$"
	_, err := idemclient.Do(context.Background(), c.rt, &clientOpCreateRefund, idemclient.NewRequest("/refunds"), readCreateRefundResponse, opts...)
	return err
}

// send calls Do, but takes no options: not a client's method.
func send(ctx context.Context, c *Client) {
	idemclient.Do(ctx, c.rt, &clientOpCreateRefund, idemclient.NewRequest("/refunds"), readCreateRefundResponse)
}
