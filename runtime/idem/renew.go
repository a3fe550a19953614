package idem

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// renewer keeps the leases of an engine's running lease-mode handlers alive,
// up to their maximum hold (Config.MaxHold) and not past it.
// It is one goroutine per engine with a connection of its own, opened like
// the pool's connections but outside the pool: handlers that hold every
// pooled connection (or requests queued for one) cannot delay a renewal.
// Each round renews every lease that is due, and those close to due, in one
// statement.
//
// A lease the statement does not return was taken over: its handler's
// context is cancelled with ErrLeaseLost. A failed round is reported to
// Hooks.OnError and retried with backoff; a handler whose lease ran out
// meanwhile (by this process's clock, counted from before the last
// statement that set it) is cancelled with ErrLeaseLost too, since another
// request may have taken the claim over.
//
// It starts with the first lease and stops, closing its connection, when no
// lease has been held for renewerIdle.
type renewer struct {
	e *Engine

	mu      sync.Mutex
	claims  map[*runState]struct{}
	wake    chan struct{}
	running bool
	conn    *pgx.Conn // nil: the DB offers no way to open one; renew through it
}

const renewerIdle = 10 * time.Second

func newRenewer(e *Engine) *renewer {
	return &renewer{e: e, claims: map[*runState]struct{}{}, wake: make(chan struct{}, 1)}
}

// keepAlive registers rs with the engine's renewer while its handler runs.
// The returned context is cancelled with ErrLeaseLost when the lease is
// lost. stop unregisters rs and reports whether the lease was lost; it must
// be called before the outcome is stored.
func (rs *runState) keepAlive(ctx context.Context) (context.Context, func() (lost bool)) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := rs.e.renewer
	r.mu.Lock()
	rs.lose = cancel
	r.claims[rs] = struct{}{}
	if !r.running {
		r.running = true
		go r.run()
	}
	r.mu.Unlock()
	r.poke()
	return ctx, func() bool {
		r.mu.Lock()
		delete(r.claims, rs)
		lost := rs.lost
		r.mu.Unlock()
		cancel(nil)
		return lost
	}
}

// renewedAt records that rs's lease was set no earlier than t (a recovery
// point saved with it).
func (r *renewer) renewedAt(rs *runState, t time.Time) {
	r.mu.Lock()
	if t.After(rs.renewed) {
		rs.renewed = t
	}
	r.mu.Unlock()
}

func (r *renewer) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// due reports when rs must be renewed: at a third of its lease.
func (rs *runState) due() time.Time { return rs.renewed.Add(rs.lease / 3) }

// settled reports whether rs's lease already runs to its maximum hold
// (Config.MaxHold): no renewal may extend it, and the claim lapses then.
// The last statement that set the lease set it to renewed + lease, or, cut
// short, to holdUntil.
func (rs *runState) settled() bool {
	return !rs.holdUntil.IsZero() && !rs.renewed.Add(rs.lease).Before(rs.holdUntil)
}

func (r *renewer) run() {
	backoff := time.Duration(0)
	idle := time.NewTimer(renewerIdle)
	defer idle.Stop()
	for {
		r.mu.Lock()
		var next time.Time
		for rs := range r.claims {
			if rs.settled() {
				continue
			}
			if d := rs.due(); next.IsZero() || d.Before(next) {
				next = d
			}
		}
		if next.IsZero() {
			r.mu.Unlock()
			idle.Reset(renewerIdle)
			select {
			case <-r.wake:
				continue
			case <-idle.C:
			}
			r.mu.Lock()
			if len(r.claims) == 0 {
				r.running = false
				r.closeConn()
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
			continue
		}
		r.mu.Unlock()
		if backoff > 0 {
			next = time.Now().Add(backoff)
		}
		if wait := time.Until(next); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.wake:
				if backoff == 0 {
					t.Stop()
					continue // a new claim may be due sooner
				}
				<-t.C // backing off: wait it out (a stopped timer never fires)
			case <-t.C:
			}
		}
		if err := r.round(); err != nil {
			r.report(fmt.Errorf("idem: renew leases: %w", err))
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
		} else {
			backoff = 0
		}
	}
}

// round renews every lease at least half-way to due in one statement.
func (r *renewer) round() error {
	now := time.Now()
	r.mu.Lock()
	var batch []*runState
	var ls []leaseRenewal
	for rs := range r.claims {
		if now.Sub(rs.renewed) < rs.lease/6 || rs.settled() {
			continue
		}
		batch = append(batch, rs)
		ls = append(ls, leaseRenewal{claimID{rs.id, rs.fence}, rs.leaseMs(now)})
	}
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	// Bounded by the shortest lease: past it, a retry is due anyway.
	timeout := batch[0].lease
	for _, rs := range batch {
		timeout = min(timeout, rs.lease)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rows, err := r.renew(ctx, ls)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		for _, rs := range batch {
			if _, live := r.claims[rs]; live && time.Since(rs.renewed) >= rs.lease {
				rs.lost = true
				rs.lose(fmt.Errorf("%w: its lease ran out while it could not be renewed", ErrLeaseLost))
			}
		}
		return err
	}
	held := make(map[claimID]bool, len(rows))
	for _, c := range rows {
		held[c] = true
	}
	for _, rs := range batch {
		if _, live := r.claims[rs]; !live {
			continue // finished meanwhile: its outcome decides
		}
		if held[claimID{rs.id, rs.fence}] {
			rs.renewed = now
		} else {
			rs.lost = true
			rs.lose(ErrLeaseLost)
		}
	}
	return nil
}

// report hands a failed round to Hooks.OnError (with no operation: a round
// spans them), or logs it.
func (r *renewer) report(err error) {
	ctx := context.Background()
	if h := r.e.cfg.Hooks.OnError; h != nil {
		h(ctx, nil, err)
		return
	}
	r.e.logger().LogAttrs(ctx, slog.LevelError, "idem: error", slog.Any("error", err))
}

// renew runs RenewLeases on the renewer's own connection, opening it (again)
// when needed. When it cannot be opened (the server refuses more clients,
// or opening one takes half the round's time), the round renews through the
// engine's DB instead: waiting there for a pooled connection may still beat
// the lease, while giving up would lose every claim the round carries.
func (r *renewer) renew(ctx context.Context, ls []leaseRenewal) ([]claimID, error) {
	if r.conn == nil || r.conn.IsClosed() {
		conn, err := r.dialHalf(ctx)
		if err != nil {
			rows, perr := r.e.q.renewLeases(ctx, ls)
			if perr != nil {
				return nil, fmt.Errorf("%w (through the pool: %w)", err, perr)
			}
			r.report(fmt.Errorf("idem: renew leases: %w; renewed through the pool", err))
			return rows, nil
		}
		if conn == nil { // no way to open one: share the DB
			return r.e.q.renewLeases(ctx, ls)
		}
		r.mu.Lock()
		r.conn = conn
		r.mu.Unlock()
	}
	rows, err := statementsOn(r.conn).renewLeases(ctx, ls)
	if err != nil && (ctx.Err() != nil || databaseUnavailable(err)) {
		r.mu.Lock()
		r.closeConn() // a fresh one next round
		r.mu.Unlock()
	}
	return rows, err
}

// closeConn closes the renewer's connection; r.mu is held.
func (r *renewer) closeConn() {
	if r.conn != nil {
		_ = r.conn.Close(context.Background())
		r.conn = nil
	}
}

// dialHalf is dial bounded by half the time ctx has left.
func (r *renewer) dialHalf(ctx context.Context) (*pgx.Conn, error) {
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		defer cancel()
	}
	conn, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the renewer's connection: %w", err)
	}
	return conn, nil
}

// dial opens a connection configured like the engine's DB ones: a pool's
// connection config with its BeforeConnect and AfterConnect hooks, or a
// single connection's config. nil when the DB is neither.
func (r *renewer) dial(ctx context.Context) (*pgx.Conn, error) {
	switch db := r.e.db.(type) {
	case interface{ Config() *pgxpool.Config }:
		cfg := db.Config()
		cc := cfg.ConnConfig.Copy()
		if cfg.BeforeConnect != nil {
			if err := cfg.BeforeConnect(ctx, cc); err != nil {
				return nil, err
			}
		}
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			return nil, err
		}
		if cfg.AfterConnect != nil {
			if err := cfg.AfterConnect(ctx, conn); err != nil {
				_ = conn.Close(ctx)
				return nil, err
			}
		}
		return conn, nil
	case *pgx.Conn:
		return pgx.ConnectConfig(ctx, db.Config().Copy())
	}
	return nil, nil
}
