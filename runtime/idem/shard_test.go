package idem_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// shards is three PostgreSQL servers, each the home of some tenants.
type shards struct {
	dbs     []*pgtest.DB
	shardOf map[string]int
}

func newShards(t *testing.T) *shards {
	t.Helper()
	s := &shards{shardOf: map[string]int{"acme": 0, "globex": 1, "initech": 2, "umbrella": 1}}
	for _, server := range append([]string{""}, pgtest.StartServers(t, 2)...) {
		s.dbs = append(s.dbs, pgtest.New(t, pgtest.Options{Server: server, Migrations: businessSchema}))
	}
	return s
}

// config is an engine configuration that scopes requests by X-Tenant and
// stores each on its tenant's shard.
func (s *shards) config() idem.Config {
	return idem.Config{
		Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Shard: func(ctx context.Context, tenant string) (idem.DB, error) {
			i, ok := s.shardOf[tenant]
			if !ok {
				return nil, &idemproblem.Problem{Status: 404, Code: "ERR404_NOT_FOUND", Reason: "NO_SUCH_TENANT",
					Detail: "no tenant " + tenant}
			}
			return s.dbs[i].Pool, nil
		},
		Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
	}
}

// count runs a count on shard i.
func (s *shards) count(t *testing.T, i int, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.dbs[i].QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestShards runs one engine over three PostgreSQL servers, choosing the
// database per request by tenant (Config.Shard): each request's record and
// business rows land on its tenant's server and nowhere else, replays and
// conflicts are decided there, duplicates in flight still run once, lease
// renewals and recovery points go to the claim's server (a handler holding
// its claim for several leases keeps it), and an unknown tenant gets the
// Shard function's problem and leaves nothing anywhere.
func TestShards(t *testing.T) {
	t.Parallel()
	s := newShards(t)
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		t.Run(string(mode), func(t *testing.T) {
			p := testPolicy(mode)
			p.Lease = 300 * time.Millisecond
			// The DB given to New is shard 0's: Shard returns it for acme.
			e := newEnvWith(t, s.dbs[0], s.dbs[0].Pool, p, s.config())
			before := make([]int, len(s.dbs))
			for i := range s.dbs {
				before[i] = s.count(t, i, "SELECT count(*) FROM payments")
			}
			// One key value for every tenant: one record per tenant, each on
			// its own shard.
			key := newKey()
			for tenant, home := range s.shardOf {
				r := e.post(key, payReq{Amount: 10 + home}, withHeader("X-Tenant", tenant))
				if r.Status != 201 {
					t.Fatalf("%s: %d %s", tenant, r.Status, r.Body)
				}
				again := e.post(key, payReq{Amount: 10 + home}, withHeader("X-Tenant", tenant))
				if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(r.Body) {
					t.Errorf("%s: replay %d %s %v", tenant, again.Status, again.Body, again.Header)
				}
				e.post(key, payReq{Amount: 99}, withHeader("X-Tenant", tenant)).
					wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
				for i := range s.dbs {
					want := 0
					if i == home {
						want = 1
					}
					if n := s.count(t, i, "SELECT count(*) FROM idem_records WHERE tenant = $1 AND idempotency_key = $2", tenant, key); n != want {
						t.Errorf("%s: %d records on shard %d, want %d", tenant, n, i, want)
					}
					if n := s.count(t, i, "SELECT count(*) FROM payments WHERE tenant = $1 AND idem_key = $2", tenant, key); n != want {
						t.Errorf("%s: %d payments on shard %d, want %d", tenant, n, i, want)
					}
				}
			}

			// Duplicates in flight on shard 2 run once.
			dup := newKey()
			var wg sync.WaitGroup
			var created atomic.Int64
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r := e.post(dup, payReq{Amount: 5}, withHeader("X-Tenant", "initech")); r.Status == 201 {
						created.Add(1)
					}
				}()
			}
			wg.Wait()
			if n := s.count(t, 2, "SELECT count(*) FROM payments WHERE idem_key = $1", dup); n != 1 || created.Load() == 0 {
				t.Errorf("8 duplicates on shard 2: %d payments, %d answered 201", n, created.Load())
			}

			// An unknown tenant: the Shard function's problem, nothing stored.
			e.post(newKey(), payReq{Amount: 1}, withHeader("X-Tenant", "nobody")).
				wantProblem(t, 404, "ERR404_NOT_FOUND", "NO_SUCH_TENANT")
			for i := range s.dbs {
				if n := s.count(t, i, "SELECT count(*) FROM payments") - before[i]; n != map[int]int{0: 1, 1: 2, 2: 2}[i] {
					t.Errorf("shard %d: %d new payments", i, n)
				}
			}
		})
	}

	t.Run("lease held on a shard", func(t *testing.T) {
		p := testPolicy(idem.ModeLease)
		p.Lease = 4 * time.Second // 300 ms leases lapsed at load 23-31 with -race, 2 s in CI
		e := newEnvWith(t, s.dbs[0], s.dbs[0].Pool, p, s.config())
		started := make(chan struct{})
		var once sync.Once
		e.handle("hold", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
			err := idem.SaveRecoveryPoint(ctx, "step-1", []byte("on shard"))
			once.Do(func() { close(started) })
			if err != nil {
				t.Errorf("save recovery point: %v", err)
				return nil, err
			}
			select {
			case <-time.After(3 * p.Lease / 2):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			return &idem.Response{Status: 201, Body: []byte("held")}, nil
		})
		key := newKey()
		holder := e.async(key, payReq{Amount: 3, Behave: "hold"}, withHeader("X-Tenant", "initech"))
		<-started
		time.Sleep(p.Lease + 250*time.Millisecond) // past the lease the save set
		// The claim was renewed on shard 2: a duplicate is in flight, not a
		// takeover. On a loaded machine the duplicate may arrive only after
		// the holder finished: then it is a replay, never a run of its own.
		dup := e.post(key, payReq{Amount: 3, Behave: "hold"}, withHeader("X-Tenant", "initech"))
		if dup.Status != 201 || dup.Header.Get("Idempotent-Replayed") != "true" {
			dup.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
		}
		if r := recv(t, holder); r.Status != 201 || string(r.Body) != "held" {
			t.Fatalf("holder: %d %s", r.Status, r.Body)
		}
		var point string
		var attempts int
		err := s.dbs[2].QueryRow(context.Background(),
			"SELECT coalesce(recovery_point, ''), attempts FROM idem_records WHERE idempotency_key = $1", key).Scan(&point, &attempts)
		if err != nil || point != "step-1" || attempts != 1 {
			t.Errorf("shard 2 record: point %q, attempts %d, %v", point, attempts, err)
		}
	})

	// One Sweeper per shard, all at once: each deletes its own server's
	// records expired past the grace and reports its own abandoned claims.
	t.Run("sweepers", func(t *testing.T) {
		abandoned := make([]atomic.Int64, len(s.dbs))
		for i, db := range s.dbs {
			if _, err := db.Exec(context.Background(), `UPDATE idem_records SET expires_at = now() - interval '2 hours'`); err != nil {
				t.Fatal(err)
			}
			// One abandoned lease claim on each shard.
			if _, err := db.Exec(context.Background(), `UPDATE idem_records SET state = 'IN_PROGRESS', lease_expires_at = now() - interval '1 minute',
				response_status = NULL, response_body = NULL, completed_at = NULL
				WHERE ctid = (SELECT ctid FROM idem_records ORDER BY created_at LIMIT 1)`); err != nil {
				t.Fatal(err)
			}
			_ = i
		}
		var wg sync.WaitGroup
		errs := make([]error, len(s.dbs))
		results := make([]admin.SweepResult, len(s.dbs))
		for i, db := range s.dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sw := admin.NewSweeper(db.Pool, admin.SweeperConfig{
					OnAbandoned: func(context.Context, admin.AbandonedClaim) { abandoned[i].Add(1) },
				})
				results[i], errs[i] = sw.RunOnce(context.Background())
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for i := range s.dbs {
			total := s.count(t, i, "SELECT count(*) FROM idem_records")
			if results[i].Abandoned != 1 || abandoned[i].Load() != 1 || total != 1 {
				t.Errorf("shard %d (%d records): %+v, %d reported abandoned", i, total, results[i], abandoned[i].Load())
			}
			if n := s.count(t, i, "SELECT count(*) FROM idem_records WHERE state <> 'UNKNOWN'"); n != 0 {
				t.Errorf("shard %d: %d records left unswept", i, n)
			}
		}
	})
}
