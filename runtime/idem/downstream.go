package idem

import (
	"bytes"
	"context"
	"fmt"

	"github.com/idemgen/idemgen/runtime/downstream"
)

// minDownstreamSecret is the shortest Config.DownstreamSecret New accepts:
// 128 bits.
const minDownstreamSecret = 16

// handlerContext is the context the handler of the request keyed key runs
// under, and its recovery hook: ctx carrying the key (KeyFromContext), the
// record its downstream keys derive from (runtime/downstream) and the run's
// state (SaveRecoveryPoint).
func (e *Engine) handlerContext(ctx context.Context, key Key, rs *runState) context.Context {
	ctx = downstream.NewContext(ContextWithKey(ctx, key), e.cfg.DownstreamSecret,
		downstream.Record{Tenant: key.Tenant, Operation: key.Operation, Key: key.Value})
	return context.WithValue(ctx, runCtx{}, rs)
}

// downstreamSecret checks Config.DownstreamSecret and returns a copy the
// caller cannot change afterwards.
func downstreamSecret(s []byte) ([]byte, error) {
	if len(s) > 0 && len(s) < minDownstreamSecret {
		return nil, fmt.Errorf("idem: DownstreamSecret is %d bytes; want at least %d random bytes", len(s), minDownstreamSecret)
	}
	return bytes.Clone(s), nil
}
