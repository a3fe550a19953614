package idemimpl

import (
	"context"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// SetKey sets *field, the request field of an operation's idempotency key
// header, to the key the engine parsed for the request being served
// (idem.KeyFromContext: normalised, UUIDs lower-cased), so a handler sees
// one form of the key. The decoder does not read the key header: the engine
// parsed it before the decoder ran. *field is left alone when ctx carries
// no key (an optional key the client did not send).
//
// A field of type uuid.UUID (the parameter's schema says format: uuid) gets
// the engine's key as a UUID; the engine has checked it is one (key format
// uuid, or the schema's format through KeyCheck), so a key that is not is
// left out, as when absent.
func SetKey[T string | *string | uuid.UUID | *uuid.UUID](ctx context.Context, field *T) {
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
	case *uuid.UUID:
		if u, err := uuid.Parse(k.Value); err == nil {
			*f = u
		}
	case **uuid.UUID:
		if u, err := uuid.Parse(k.Value); err == nil {
			*f = &u
		}
	}
}

// KeyCheck returns the idem.Operation.CheckKey of an operation whose key
// header parameter p declares more than its key format implies (a pattern,
// an enum, a length; Required while the policy's key is optional): it
// validates the key the engine parsed against p's schema in t, as the
// decoder validates a parameter, and answers the violations the decoder
// would (a *idemproblem.ValidationError naming the header). The key is
// parsed once, by the engine; the check never reads the header.
func KeyCheck(t *Schemas, p Param) func(key string) error {
	if t == nil {
		t = &Schemas{}
	}
	return func(key string) error {
		t.compile()
		vd := &validator{t: t, in: p.In, name: p.Name, values: newBudget(DefaultLimits().MaxValues)}
		if key == "" {
			if p.Required {
				vd.fail("required", "is required")
			}
		} else {
			v := Value{Kind: KindString, Str: key}
			vd.validate(&v, p.Schema)
		}
		if len(vd.out) > 0 {
			return &idemproblem.ValidationError{Violations: vd.out}
		}
		return nil
	}
}
