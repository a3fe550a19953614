package idem

import (
	"context"
	"fmt"
	"reflect"
)

// engineFor returns the engine that serves tenant's requests: e without
// Config.Shard, else the one over the DB Config.Shard chooses, made on
// first use and kept. It shares e's
// configuration and in-process state (shared), and has statements and a
// lease renewer of its own,
// so that every statement of a request — the record, the handler's
// transaction, bookkeeping, lease renewals, recovery points — goes to that
// DB.
func (e *Engine) engineFor(ctx context.Context, tenant string) (*Engine, error) {
	if e.cfg.Shard == nil {
		return e, nil
	}
	db, err := e.cfg.Shard(ctx, tenant)
	if err != nil {
		if isProblem(err) {
			return nil, err
		}
		return nil, fmt.Errorf("idem: choose the database of tenant %q: %w", tenant, err)
	}
	if db == nil || typedNil(db) {
		return nil, fmt.Errorf("idem: Config.Shard chose no database for tenant %q", tenant)
	}
	if t := reflect.TypeOf(db); !t.Comparable() {
		return nil, fmt.Errorf("idem: Config.Shard chose a %v for tenant %q, which cannot be told apart from another: return a pointer such as *pgxpool.Pool", t, tenant)
	}
	if db == e.db {
		return e, nil
	}
	if s, ok := e.shards.Load(db); ok {
		return s.(*Engine), nil
	}
	got, _ := e.shards.LoadOrStore(db, newEngine(db, e.shared))
	return got.(*Engine), nil
}
