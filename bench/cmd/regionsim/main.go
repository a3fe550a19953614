// Command regionsim runs the two-region simulation of docs/scaling.md
// ("Regions"): two PostgreSQL clusters (scripts/regions.sh starts them and
// sets REGION_A_URL, REGION_B_URL, REGION_A_DIR, REGION_B_DIR), each
// region's records replicated to the other by native logical replication,
// a payments service per region on loopback, and clients whose first
// answer is lost, so that every call is retried with the same key. Each
// phase sends fresh keys (half to an atomic-mode operation, half to a
// lease-mode one) under one fault (none, replication lag, a partition, a
// region crashed), three times: with home routing (idemclient WithRegions:
// retries go to the key's home region), with the server's header alone (a
// client in the other region that does not know the key's home follows a
// 421), and without (retries go to the other region, as behind a global
// load balancer that fails over). After the fault heals and replication catches up, it counts
// from the databases themselves: keys executed in both regions, those the
// conflict triggers detected, compensations queued, and compensations
// drained. It exits non-zero when home routing let a duplicate execute, or
// when any executed duplicate was not detected and compensated.
//
//	make regions    (= scripts/regions.sh run sh -c 'cd bench && go run ./cmd/regionsim')
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
)

var (
	keysFlag = flag.Int("keys", 100, "keys per phase and variant")
	conc     = flag.Int("concurrency", 8, "calls in flight")
	outFlag  = flag.String("out", "", "also write the table (markdown) to this file")
	rounds   = flag.Int("cost-rounds", 5, "rounds of the cost comparison (0: skip it)")
	costN    = flag.Int("cost-n", 300, "requests per variant and round of the cost comparison")
)

// region is one region: its name, databases and service.
type region struct {
	name  string
	url   string        // superuser URL (subscriptions, faults)
	dir   string        // scripts/regions.sh's directory of the cluster
	admin *pgxpool.Pool // superuser, public schema
	pool  *pgxpool.Pool // the engine's: search_path idem_<name>,public
	srv   *httptest.Server
	def   idem.Region
}

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	ctx := context.Background()
	a := &region{name: "a", url: mustEnv("REGION_A_URL"), dir: mustEnv("REGION_A_DIR")}
	b := &region{name: "b", url: mustEnv("REGION_B_URL"), dir: mustEnv("REGION_B_DIR")}
	a.def = idem.Region{Name: "a", Peers: []string{"b"}}
	b.def = idem.Region{Name: "b", Peers: []string{"a"}}
	for _, r := range []*region{a, b} {
		if err := r.open(ctx); err != nil {
			log.Fatalf("regionsim: region %s: %v", r.name, err)
		}
	}
	for _, p := range [][2]*region{{a, b}, {b, a}} {
		if err := schema.SubscribeRegion(ctx, p[0].admin, p[0].name, p[1].name, p[1].url); err != nil {
			log.Fatalf("regionsim: %v", err)
		}
	}
	for _, r := range []*region{a, b} {
		r.serve()
		defer r.srv.Close()
	}
	if err := waitCaughtUp(ctx, a, b); err != nil {
		log.Fatalf("regionsim: %v", err)
	}

	lag, err := probeLag(ctx, a, b, 50)
	if err != nil {
		log.Fatalf("regionsim: %v", err)
	}
	log.Printf("replication lag a -> b, %s", lag)
	phases := []phase{
		{name: "steady", what: "replication running; the retry follows the lost answer after 10-20 ms"},
		{name: "steady-1s", what: "replication running; the retry follows after 0.5-1 s", backoff: time.Second},
		{name: "lag", what: "replication applied in bursts: each subscription off 400 ms, on 100 ms"},
		{name: "partition", what: "both subscriptions disabled while the keys are sent"},
		{name: "crash", what: "b's cluster killed (kill -9) with its last records unreplicated, revived after 3 s; keys homed in b"},
	}
	var rows []result
	failed := false
	for _, ph := range phases {
		for _, routing := range []string{"home", "header", "none"} {
			res, err := run(ctx, a, b, ph, routing)
			if err != nil {
				log.Fatalf("regionsim: phase %s: %v", ph.name, err)
			}
			log.Printf("%s", res.line())
			rows = append(rows, res)
			if routing == "home" && res.twice > 0 {
				failed = true
				log.Printf("regionsim: FAIL: home routing let %d keys execute twice", res.twice)
			}
			if res.silent > 0 || res.queued != res.twice || res.drained != res.twice || res.doubled > 0 {
				failed = true
				log.Printf("regionsim: FAIL: executed twice %d, detected %d, queued %d, drained %d, still doubled %d",
					res.twice, res.detected, res.queued, res.drained, res.doubled)
			}
		}
	}
	table := render(phases, rows, lag)
	if *rounds > 0 {
		c, err := cost(ctx, a)
		if err != nil {
			log.Fatalf("regionsim: cost: %v", err)
		}
		table += "\n" + c
	}
	fmt.Print(table)
	if *outFlag != "" {
		if err := os.WriteFile(*outFlag, []byte(table), 0o644); err != nil {
			log.Fatalf("regionsim: %v", err)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func mustEnv(k string) string {
	v := os.Getenv(k)
	if v == "" {
		log.Fatalf("regionsim: %s is not set: run it under scripts/regions.sh run (make regions)", k)
	}
	return v
}

func (r *region) open(ctx context.Context) error {
	var err error
	if r.admin, err = pgxpool.New(ctx, r.url); err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(r.url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema.RegionSchema(r.name) + ",public"
	cfg.MaxConns = 16
	if r.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return err
	}
	if err := schema.SetupRegion(ctx, r.pool, r.def); err != nil {
		return err
	}
	_, err = r.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS payments (idem_key text PRIMARY KEY, amount integer NOT NULL,
		reversed boolean NOT NULL DEFAULT false)`)
	return err
}

var (
	payOp      = &idem.Operation{ID: "createPayment", Method: "POST", Pattern: "/payments", Policy: policy(idem.ModeAtomic)}
	payLeaseOp = &idem.Operation{ID: "createLeasePayment", Method: "POST", Pattern: "/lease-payments", Policy: policy(idem.ModeLease)}
)

func policy(m idem.Mode) idem.Policy {
	p := idem.DefaultPolicy()
	p.Mode = m
	return p
}

func other(a, b, r *region) *region {
	if r == a {
		return b
	}
	return a
}

// serve starts the region's payments service: one atomic-mode operation
// whose business effect is a row in payments.
func (r *region) serve() {
	r.srv = payments(r.pool, &r.def, r.name)
}

// payments is the service over pool, in region def (nil: one region).
func payments(pool *pgxpool.Pool, def *idem.Region, name string) *httptest.Server {
	eng, err := idem.New(pool, idem.Config{Region: def, Operations: []*idem.Operation{payOp, payLeaseOp},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		op := payOp
		if req.URL.Path == payLeaseOp.Pattern {
			op = payLeaseOp
		}
		eng.Serve(w, req, op, func(body []byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				k, _ := idem.KeyFromContext(ctx)
				if _, err := tx.Exec(ctx, "INSERT INTO payments (idem_key, amount) VALUES ($1, 1)", k.Value); err != nil {
					return nil, err
				}
				return &idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
					Body: []byte(`{"region":"` + name + `"}`)}, nil
			}}, nil
		})
	}))
}
