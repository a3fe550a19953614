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
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
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
		if err := idem.SubscribeRegion(ctx, p[0].admin, p[0].name, p[1].name, p[1].url); err != nil {
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
	cfg.ConnConfig.RuntimeParams["search_path"] = idem.RegionSchema(r.name) + ",public"
	cfg.MaxConns = 16
	if r.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return err
	}
	if err := idem.SetupRegion(ctx, r.pool, r.def); err != nil {
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

type phase struct {
	name, what string
	backoff    time.Duration // first retry's backoff; 0: 20 ms
}

type result struct {
	phase             string
	routing           string // home, header or none (see run)
	keys              int
	ok, refused, fail int // final answers: 2xx, 421, other or none
	misdirected       int // 421 answers seen on the way
	twice             int // keys with a payment in both regions
	detected          int // of those, recorded as a conflict of two completed records
	queued            int // compensations queued (or already done) for them
	drained           int // compensations handed to the service and done
	doubled           int // keys still paid in both regions after draining
	silent            int // executed twice, not detected
	seconds           float64
}

func (r result) line() string {
	return fmt.Sprintf("%-9s routing=%-6s keys=%d ok=%d 421=%d failed=%d seen421=%d twice=%d detected=%d queued=%d drained=%d silent=%d (%.1fs)",
		r.phase, r.routing, r.keys, r.ok, r.refused, r.fail, r.misdirected, r.twice, r.detected, r.queued, r.drained, r.silent, r.seconds)
}

// lossy loses the answer to the first attempt of every key (after the
// server acted on it), and, without routing, sends every later attempt to
// the other region.
type lossy struct {
	base   http.RoundTripper
	routed bool
	other  map[string]string // host -> the other region's host
	mu     sync.Mutex
	seen   map[string]int
}

func (l *lossy) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get("Idempotency-Key")
	l.mu.Lock()
	l.seen[key]++
	n := l.seen[key]
	l.mu.Unlock()
	if n > 1 && !l.routed {
		req = req.Clone(req.Context())
		req.URL.Host = l.other[req.URL.Host]
		req.Host = req.URL.Host
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
	}
	res, err := l.base.RoundTrip(req)
	if err != nil || n > 1 {
		return res, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("regionsim: the answer was lost")
}

func host(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		log.Fatal(err)
	}
	return p.Host
}

// run sends the phase's keys, each first to its home region, whose answer
// is lost. Then, by routing: home, the same client retries (idemclient
// WithRegions: to the key's home); header, another client in the other
// region, with WithRegions but not knowing the key's home, sends the key
// there and follows a 421 (the server's half of home routing alone); none,
// the retries go to the other region and a 421 is final.
func run(ctx context.Context, a, b *region, ph phase, routing string) (result, error) {
	res := result{phase: ph.name, routing: routing, keys: *keysFlag}
	routed := routing != "none"
	start := time.Now()
	keys := make([]string, *keysFlag)
	homes := make([]*region, *keysFlag)
	for i := range keys {
		keys[i] = uuid.Must(uuid.NewV7()).String()
		homes[i] = a
		if i%2 == 1 || ph.name == "crash" {
			homes[i] = b
		}
	}
	tr := &lossy{base: &http.Transport{MaxIdleConnsPerHost: 64}, routed: routed, seen: map[string]int{},
		other: map[string]string{host(a.srv.URL): host(b.srv.URL), host(b.srv.URL): host(a.srv.URL)}}
	hc := &http.Client{Transport: tr}
	pol := idemclient.RetryPolicy{MaxAttempts: 40, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
		MaxRetryAfter: 10 * time.Second, AttemptTimeout: 10 * time.Second}
	if ph.backoff > 0 {
		pol.InitialBackoff, pol.MaxBackoff = ph.backoff, 2*ph.backoff
	}
	urls := map[string]string{"a": a.srv.URL, "b": b.srv.URL}
	clients := map[*region]*idemclient.Client{}
	for _, r := range []*region{a, b} {
		opts := []idemclient.Option{idemclient.WithHTTPClient(hc), idemclient.WithRetryPolicy(pol)}
		if routed {
			opts = append(opts, idemclient.WithRegions(r.name, urls))
		}
		c, err := idemclient.New(r.srv.URL, opts...)
		if err != nil {
			return res, err
		}
		clients[r] = c
	}

	// The fault.
	stop := make(chan struct{})
	var faults sync.WaitGroup
	switch ph.name {
	case "lag":
		faults.Add(1)
		go func() {
			defer faults.Done()
			for {
				for _, p := range [][2]*region{{a, b}, {b, a}} {
					_ = setSubscription(ctx, p[0], p[1], false)
				}
				select {
				case <-stop:
					return
				case <-time.After(400 * time.Millisecond):
				}
				for _, p := range [][2]*region{{a, b}, {b, a}} {
					_ = setSubscription(ctx, p[0], p[1], true)
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	case "partition":
		for _, p := range [][2]*region{{a, b}, {b, a}} {
			if err := setSubscription(ctx, p[0], p[1], false); err != nil {
				return res, err
			}
		}
	case "crash":
		// b's records stop reaching a (lag at the moment of the crash).
		if err := setSubscription(ctx, a, b, false); err != nil {
			return res, err
		}
	}

	ops := []*idemclient.Operation{
		{ID: payOp.ID, Method: "POST", Idempotent: true, KeyHeader: "Idempotency-Key", KeyFormat: "uuid"},
		{ID: payLeaseOp.ID, Method: "POST", Idempotent: true, KeyHeader: "Idempotency-Key", KeyFormat: "uuid"},
	}
	var okN, refusedN, failN, misN atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, *conc)
	crashed := make(chan struct{})
	var firsts atomic.Int64
	var crashOnce sync.Once
	for i, key := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func(key string, home *region, op *idemclient.Operation) {
			defer wg.Done()
			defer func() { <-sem }()
			req := idemclient.NewRequest("/payments")
			if op.ID == payLeaseOp.ID {
				req = idemclient.NewRequest("/lease-payments")
			}
			if err := req.JSON("application/json", map[string]any{"amount": 1}); err != nil {
				log.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			firstCall := true
			observe := idemclient.WithAttemptObserver(func(at idemclient.Attempt) {
				if at.Status == http.StatusMisdirectedRequest {
					misN.Add(1)
				}
				if at.N == 1 && firstCall && ph.name == "crash" && firsts.Add(1) == int64(len(keys)) {
					crashOnce.Do(func() { close(crashed) })
				}
			})
			decode := func(r *idemclient.Response) (int, error) {
				if r.Status/100 == 2 {
					return r.Status, nil
				}
				return 0, r.Error()
			}
			c := clients[home]
			if routing == "header" {
				// The first call's one attempt is lost; the key moves on to
				// a client in the other region.
				_, _ = idemclient.Do(cctx, c, op, req, decode, idemclient.WithIdempotencyKey(key), idemclient.WithMaxAttempts(1), observe)
				c = clients[other(a, b, home)]
				firstCall = false
				// As long as a retry would have waited (the first backoff).
				time.Sleep(pol.InitialBackoff/2 + time.Duration(rand.Int64N(int64(pol.InitialBackoff/2)+1)))
			}
			out, err := idemclient.Do(cctx, c, op, req, decode, idemclient.WithIdempotencyKey(key), observe)
			var ce *idemclient.Error
			switch {
			case err == nil && out.Status/100 == 2:
				okN.Add(1)
			case errors.As(err, &ce) && ce.Status == http.StatusMisdirectedRequest:
				refusedN.Add(1)
			default:
				failN.Add(1)
			}
		}(key, homes[i], ops[(i/2)%2])
		if ph.name == "crash" && i == len(keys)-1 {
			// Every first attempt reached b (and was lost): crash it now,
			// while the retries back off.
			<-crashed
			if err := script(b, "crash"); err != nil {
				return res, err
			}
			faults.Add(1)
			go func() {
				defer faults.Done()
				time.Sleep(3 * time.Second)
				if err := script(b, "revive"); err != nil {
					log.Printf("regionsim: revive b: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	faults.Wait()
	res.ok, res.refused, res.fail, res.misdirected = int(okN.Load()), int(refusedN.Load()), int(failN.Load()), int(misN.Load())

	// Heal and let replication catch up.
	for _, p := range [][2]*region{{a, b}, {b, a}} {
		if err := setSubscription(ctx, p[0], p[1], true); err != nil {
			return res, err
		}
	}
	if err := waitCaughtUp(ctx, a, b); err != nil {
		return res, err
	}
	if err := count(ctx, a, b, keys, &res); err != nil {
		return res, err
	}
	res.seconds = time.Since(start).Seconds()
	return res, nil
}

func setSubscription(ctx context.Context, local, peer *region, on bool) error {
	verb := "DISABLE"
	if on {
		verb = "ENABLE"
	}
	_, err := local.admin.Exec(ctx, "ALTER SUBSCRIPTION "+idem.RegionSubscription(local.name, peer.name)+" "+verb)
	return err
}

func script(r *region, verb string) error {
	s := os.Getenv("REGIONS_SCRIPT")
	if s == "" {
		return errors.New("REGIONS_SCRIPT is not set: run under scripts/regions.sh run")
	}
	cmd := exec.Command(s, verb, r.dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", verb, r.dir, err)
	}
	if verb == "crash" {
		r.admin.Reset()
		r.pool.Reset()
	}
	return nil
}

// waitCaughtUp waits until each region's replica of the other's records
// holds exactly what the other holds (ids and states).
func waitCaughtUp(ctx context.Context, a, b *region) error {
	deadline := time.Now().Add(120 * time.Second)
	for {
		same := true
		for _, p := range [][2]*region{{a, b}, {b, a}} {
			src, err := digest(ctx, p[0], p[0].name)
			if err != nil {
				same = false
				break
			}
			dst, err := digest(ctx, p[1], p[0].name)
			if err != nil || src != dst {
				same = false
				break
			}
		}
		if same {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("replication did not catch up in 120 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func digest(ctx context.Context, in *region, of string) (string, error) {
	var d string
	err := in.admin.QueryRow(ctx, "SELECT count(*)::text || ':' || coalesce(md5(string_agg(id::text || state, ',' ORDER BY id)), '') FROM "+
		idem.RegionSchema(of)+".idem_records").Scan(&d)
	return d, err
}

// count measures the phase's keys from both databases, then drains the
// compensations (a compensation reverses the losing region's payment).
func count(ctx context.Context, a, b *region, keys []string, res *result) error {
	paid := map[string]int{}
	for _, r := range []*region{a, b} {
		rows, err := r.admin.Query(ctx, "SELECT idem_key FROM "+idem.RegionSchema(r.name)+".payments WHERE idem_key = ANY($1)", keys)
		if err != nil {
			return err
		}
		ks, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, k := range ks {
			paid[k]++
		}
	}
	twice := map[string]bool{}
	for k, n := range paid {
		if n > 1 {
			twice[k] = true
		}
	}
	inPhase := map[string]bool{}
	for _, k := range keys {
		inPhase[k] = true
	}
	detected := map[string]bool{}
	for _, r := range []*region{a, b} {
		cs, err := r.def.Conflicts(ctx, r.pool)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if !inPhase[c.Key] {
				continue
			}
			if c.State == "COMPLETED" && c.PeerState == "COMPLETED" {
				detected[c.Key] = true
			}
			if c.Compensation != "NONE" {
				res.queued++
			}
		}
	}
	for _, r := range []*region{a, b} {
		n, err := r.def.DrainCompensations(ctx, r.pool, 0, func(ctx context.Context, tx pgx.Tx, c idem.RegionConflict) error {
			tag, err := tx.Exec(ctx, "UPDATE payments SET reversed = true WHERE idem_key = $1 AND NOT reversed", c.Key)
			if err == nil && tag.RowsAffected() != 1 {
				err = fmt.Errorf("no payment of key %s to reverse in region %s", c.Key, r.name)
			}
			return err
		})
		if err != nil {
			return err
		}
		res.drained += n
	}
	live := map[string]int{}
	for _, r := range []*region{a, b} {
		rows, err := r.admin.Query(ctx, "SELECT idem_key FROM "+idem.RegionSchema(r.name)+".payments WHERE idem_key = ANY($1) AND NOT reversed", keys)
		if err != nil {
			return err
		}
		ks, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, k := range ks {
			live[k]++
		}
	}
	for _, n := range live {
		if n > 1 {
			res.doubled++
		}
	}
	res.twice = len(twice)
	for k := range twice {
		if detected[k] {
			res.detected++
		} else {
			res.silent++
		}
	}
	return nil
}

func render(phases []phase, rows []result, lag string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Replication lag a -> b, no fault: %s.\n\n", lag)
	fmt.Fprintf(&b, "| fault | routing | keys | 2xx | 421 final | other final | 421 on the way | executed twice | detected | compensations queued | drained | silent |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		routing := r.routing
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.phase, routing, r.keys, r.ok, r.refused, r.fail,
			r.misdirected, r.twice, r.detected, r.queued, r.drained, r.silent)
	}
	fmt.Fprintf(&b, "\nFaults:\n\n")
	for _, p := range phases {
		fmt.Fprintf(&b, "- %s: %s\n", p.name, p.what)
	}
	return b.String()
}

// probeLag measures, n times, how long a record committed in a takes to
// appear in b's replica of a's records.
func probeLag(ctx context.Context, a, b *region, n int) (string, error) {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		key := "lag-probe-" + uuid.Must(uuid.NewV7()).String()
		if _, err := a.pool.Exec(ctx, `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint,
			schema_version, response_status, response_body, completed_at, expires_at)
			VALUES (idem_record_id('probe', 'probe', $1), 'probe', 'probe', $1, 'COMPLETED', sha256('x'::bytea), 'v1',
			200, '{}'::bytea, now(), now() + interval '2 hours')`, key); err != nil {
			return "", err
		}
		start := time.Now()
		for {
			var found bool
			if err := b.admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM idem_a.idem_records WHERE tenant = 'probe' AND idempotency_key = $1)",
				key).Scan(&found); err != nil {
				return "", err
			}
			if found {
				ds = append(ds, time.Since(start))
				break
			}
			if time.Since(start) > 30*time.Second {
				return "", errors.New("lag probe: a record did not replicate in 30 s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	return fmt.Sprintf("median %s, p90 %s, max %s over %d records (polled every 1 ms)", ms(ds[len(ds)/2]), ms(ds[len(ds)*9/10]), ms(ds[len(ds)-1]), n), nil
}

// cost compares, on region a's cluster, the single-region engine (its own
// schema: no triggers, no publication, Config.Region nil) with the region
// engine (home check, conflict triggers, published table): new keys and
// replays, sequential, rounds alternating the variants.
func cost(ctx context.Context, a *region) (string, error) {
	cfg, err := pgxpool.ParseConfig(a.url)
	if err != nil {
		return "", err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "single,public"
	cfg.MaxConns = 4
	if _, err := a.admin.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS single"); err != nil {
		return "", err
	}
	single, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer single.Close()
	if err := idem.Migrate(ctx, single); err != nil {
		return "", err
	}
	if _, err := single.Exec(ctx, `CREATE TABLE IF NOT EXISTS payments (idem_key text PRIMARY KEY, amount integer NOT NULL,
		reversed boolean NOT NULL DEFAULT false)`); err != nil {
		return "", err
	}
	srvs := map[string]*httptest.Server{"one region": payments(single, nil, "single"), "region a": a.srv}
	defer srvs["one region"].Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func(u, key string) error {
		req, _ := http.NewRequest("POST", u+"/payments", bytes.NewReader([]byte(`{"amount":1}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	names := []string{"one region", "region a"}
	// Per request, the two variants one after the other (which first
	// alternates), so that load from outside falls on both alike; the
	// medians of all requests are compared.
	lat := map[string][2][]time.Duration{}
	for round := 0; round < *rounds; round++ {
		keys := map[string][]string{}
		for _, n := range names {
			for i := 0; i < *costN; i++ {
				keys[n] = append(keys[n], uuid.Must(uuid.NewV7()).String())
			}
		}
		for pass := 0; pass < 2; pass++ { // 0: new keys, 1: their replays
			for i := 0; i < *costN; i++ {
				order := names
				if (i+round)%2 == 1 {
					order = []string{names[1], names[0]}
				}
				for _, n := range order {
					start := time.Now()
					if err := post(srvs[n].URL, keys[n][i]); err != nil {
						return "", fmt.Errorf("%s: %w", n, err)
					}
					l := lat[n]
					l[pass] = append(l[pass], time.Since(start))
					lat[n] = l
				}
			}
		}
	}
	q := func(ds []time.Duration, f float64) time.Duration {
		ds = append([]time.Duration(nil), ds...)
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[int(f*float64(len(ds)-1))]
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1000) }
	var b bytes.Buffer
	fmt.Fprintf(&b, "Cost of a region (cluster a, sequential requests, %d rounds of %d requests per variant, the variants interleaved request by request; median and p90 of all):\n\n", *rounds, *costN)
	fmt.Fprintf(&b, "| request | one region: median / p90 | region a: median / p90 | ratio of medians |\n|---|---|---|---|\n")
	for pass, name := range []string{"new key (executes)", "replay"} {
		one, reg := lat["one region"][pass], lat["region a"][pass]
		fmt.Fprintf(&b, "| %s | %s / %s | %s / %s | %.2f |\n", name, us(q(one, 0.5)), us(q(one, 0.9)), us(q(reg, 0.5)), us(q(reg, 0.9)),
			float64(q(reg, 0.5))/float64(q(one, 0.5)))
	}
	return b.String(), nil
}
