// Package idem is a stub of idemgen's runtime/idem.
package idem

import "context"

type Key struct{ Tenant, Operation, Value string }

func KeyFromContext(ctx context.Context) (Key, bool) { return Key{}, false }
