package idemimpl

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idem"
)

// SetKey sets *field, the request field of an operation's idempotency key
// header, to the key the engine parsed for the request being served
// (idem.KeyFromContext: normalised, UUIDs lower-cased), so a handler sees
// one form of the key. The decoder does not read the key header: the engine
// parsed it before the decoder ran. *field is left alone when ctx carries
// no key (an optional key the client did not send).
func SetKey[T string | *string](ctx context.Context, field *T) {
	k, ok := idem.KeyFromContext(ctx)
	if !ok {
		return
	}
	switch f := any(field).(type) {
	case *string:
		*f = k.Value
	case **string:
		v := k.Value
		*f = &v
	}
}
