package idem

import (
	"context"
	"log/slog"
)

// WarnUnscoped is called by a generated NewHandler (and Routes) whose
// idempotent operations ops require security. An engine without
// Config.Scope keeps every principal's keys in one key space: a principal
// that sends a key another one used, with the same request, gets the other
// one's stored response, and one with another request a 409 that tells it
// the key is taken. WarnUnscoped then logs a warning through Config.Logger
// naming the package and how many operations (the first few by id), and
// reports true; with a Scope it does nothing. A service that shares one key
// space on purpose (a single client) says so with a Scope that returns "".
func (e *Engine) WarnUnscoped(pkg string, ops []string) bool {
	if e == nil || e.cfg.Scope != nil || len(ops) == 0 {
		return false
	}
	first := ops
	if len(first) > 5 {
		first = first[:5]
	}
	e.logger().LogAttrs(context.Background(), slog.LevelWarn,
		"idem: operations that require security share one idempotency key space across principals; set idem.Config.Scope, e.g. idem.PrincipalScope(func(p *YourPrincipal) string { return p.TenantID })",
		slog.String("package", pkg), slog.Int("operations", len(ops)), slog.Any("first", first))
	return true
}
