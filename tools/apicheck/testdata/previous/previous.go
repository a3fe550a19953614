// Package previous is a service's code written against runtime/idem before
// four of its names moved (CHANGELOG.md, v0.1.0), and against the contract's
// codes and reasons in idem and idemclient before they moved to idemproblem:
// it must keep compiling, with deprecation warnings only, until the aliases
// are removed.
package previous

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

// Setup migrates and starts a sweeper, as services did before.
func Setup(ctx context.Context, pool *pgxpool.Pool, abandoned chan<- idem.Key) (*idem.Sweeper, error) {
	if err := idem.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	sw := idem.NewSweeper(pool, idem.SweeperConfig{
		Interval: time.Minute,
		OnAbandoned: func(ctx context.Context, c idem.AbandonedClaim) {
			abandoned <- c.Key
		},
		OnPass: func(ctx context.Context, r idem.SweepResult) { _ = r.Deleted },
	})
	go func() { _ = sw.Run(ctx) }()
	return sw, nil
}

// Note is a request field that may be absent, null or a string.
type Note struct {
	Text idem.Nullable[string] `json:"text,omitzero"`
}

// Clear and Set make the two present states.
func Clear() Note           { return Note{Text: idem.Null[string]()} }
func Set(s string) Note     { return Note{Text: idem.NewNullable(s)} }
func Refuse() *idem.Problem { return &idem.Problem{Status: http.StatusConflict, Title: "no"} }

// Conflicted tells a refusal of a reused key by the names package idem
// and package idemclient had for the contract's reasons (before they
// moved to idemproblem).
func Conflicted(p *idem.Problem, e *idemclient.Error) bool {
	var cp *idemclient.Problem = e.Problem
	return p.Code == idem.CodeConflict && p.Reason == idem.ReasonConflict &&
		cp != nil && cp.Reason == idemclient.ReasonConflict
}
