package idemclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/runtime/downstream"
)

// WithKeySite names the call site of a call of an idempotent operation made
// inside an idempotent request (a handler of an idemgen service calling
// another service): its key is derived from the request and name
// (downstream.Key). Without it the call site is the operation's ID, so give
// a name to each of two calls of one operation in one handler that are not
// meant to be one ("refund/1", "refund/2"). Outside an idempotent request a
// call with a site is an error wrapping downstream.ErrNoRequest, not a call
// under a fresh key. A key given with WithIdempotencyKey, or in the
// request's key parameter, is sent instead.
func WithKeySite(name string) CallOption { return func(c *call) { c.site = name } }

// derivedKey returns the key of a call of op made with ctx when ctx carries
// an idempotent request (downstream.NewContext), derived for the call site
// site (op.ID when ""), and the site. Both are "" when ctx carries no
// request and the caller named no site: the call gets a fresh key.
func derivedKey(ctx context.Context, op *Operation, site string) (string, string, error) {
	named := site != ""
	if !named {
		site = op.ID
	}
	f, err := derivedFormat(op.KeyFormat)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", op.ID, err)
	}
	key, err := downstream.KeyAs(ctx, site, f)
	switch {
	case errors.Is(err, downstream.ErrNoRequest) && !named:
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("%s: deriving the idempotency key of call site %q: %w", op.ID, site, err)
	}
	return key, site, nil
}

// derivedFormat is the form of the derived keys of an operation of
// keyFormat f: a UUID of the version it requires, else a UUIDv8, which
// every other format (uuid, opaque, printable) accepts; an error for a
// format it does not know.
func derivedFormat(f string) (downstream.Format, error) {
	switch f {
	case "uuidv4":
		return downstream.UUIDv4, nil
	case "uuidv7":
		return downstream.UUIDv7, nil
	case "", "uuid", "opaque", "printable":
		return downstream.UUID, nil
	}
	return nil, fmt.Errorf("idemclient: unknown key format %q", f)
}

// derivedConflict explains a conflict on a derived key: the request is
// not the one an earlier attempt of the same incoming request sent.
func derivedConflict(site string) string {
	return fmt.Sprintf("; the key was derived from the incoming request (call site %q) and an earlier attempt of it sent another request under it: build the request from the incoming request, not from the clock or randomness, or name each call its own site (idemclient.WithKeySite)", site)
}
