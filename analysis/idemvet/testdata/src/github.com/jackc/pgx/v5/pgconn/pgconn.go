// Package pgconn is a stub of github.com/jackc/pgx/v5/pgconn.
package pgconn

type CommandTag struct{}

type PgError struct{ Code string }

func (e *PgError) Error() string { return e.Code }
