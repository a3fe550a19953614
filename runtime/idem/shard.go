package idem

import (
	"context"
	"fmt"
	"reflect"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// onShard returns the engine that serves tenant's requests: the one over
// the DB Config.Shard chooses, made on first use and kept. It shares e's
// configuration and in-process state (flights: a key
// lives on one shard), and has statements and a lease renewer of its own,
// so that every statement of a request — the record, the handler's
// transaction, bookkeeping, lease renewals, recovery points — goes to that
// DB.
func (e *Engine) onShard(ctx context.Context, tenant string) (*Engine, error) {
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
	s := &Engine{db: db, q: store.New(db), cfg: e.cfg, obs: e.obs, flights: e.flights, handoffs: e.handoffs, stored: e.stored}
	s.renewer = newRenewer(s)
	s.modes = map[Mode]mode{ModeAtomic: atomicMode{s}, ModeLease: leaseMode{s}}
	got, _ := e.shards.LoadOrStore(db, s)
	return got.(*Engine), nil
}
