package idem

import (
	"net/http"
)

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Scope resolves the tenant of a request; nil means one tenant, "".
	Scope ScopeFunc
	// MaxBodyBytes bounds the request body; larger bodies get 413 and no
	// record. Zero means 1 MiB.
	MaxBodyBytes int64
}

// Engine runs idempotent operations against PostgreSQL. It holds no state of
// its own; it is safe for concurrent use.
type Engine struct {
	db  DB
	cfg Config
}

// New returns an engine over db.
func New(db DB, cfg Config) (*Engine, error) {
	return &Engine{db: db, cfg: cfg}, nil
}

// Serve runs one idempotent request from key parsing to the response.
// TODO(engine): implementation in progress.
func (e *Engine) Serve(w http.ResponseWriter, r *http.Request, op *Operation, prepare PrepareFunc) {
	panic("idem: Serve not implemented yet")
}

// WriteProblem writes err as RFC 9457 application/problem+json. It is the
// one place errors become HTTP statuses.
func WriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	panic("idem: WriteProblem not implemented yet")
}
