// Command benchload measures what idempotency costs per request.
//
// It starts benchserver (a generated idemgen server whose operations all do
// the same business write: insert one payment row in a transaction) as a
// separate process, drives it over loopback HTTP and prints, per scenario and
// concurrency, requests/s, p50/p90/p99 latency, the ratio against the
// baseline measured in the same run, and allocations per request on the
// server. Scenarios run in alternating rounds so that a ratio compares runs
// made close together in time.
//
//	benchload -server ./benchserver -database-url $DATABASE_URL -out results.md -svg latency.svg
//
// Every ratio is of "handwritten", the same operation written by hand with
// net/http and encoding/json (benchserver's handwritten.go), in the same
// round. Besides idemgen's scenarios it measures peers on the same
// operation in the same run: "naive", a SELECT-then-INSERT middleware, and
// "fiber", Fiber v3's middleware/idempotency with its PostgreSQL storage
// (benchserver's peers.go); with -peers, servers of the same spec generated
// by other tools, each a process of its own (bench/peers: ogen,
// oapi-codegen); with -pgbench, the database's floors (pgbench.go). Every system also gets a duplicate storm with one and
// two server processes (handler runs and committed effects per key), and a
// reused-key check (same key, another body). -scale and -sweep add the
// record-count curve and the sweeper under traffic (scale.go).
//
// -scenarios runs a subset (e.g. "atomic,replay"; "storm", "mismatch",
// "scale" and "sweep" name the other parts) and -profile DIR saves a
// server CPU profile of every run, for pprof.
//
// It never fails on a slow result: it prints numbers, not verdicts. It exits
// non-zero only when the server misbehaves (a storm executing a key twice,
// an unexpected status).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

type scenario struct {
	name string
	// path is the operation's route (on the Fiber listener when fiber, on
	// the peer process on when set); key says how a request picks its key.
	path  string
	fiber bool
	on    *server
	key   func(w *worker) string
	// want is the status every request must get.
	want []int
	// pgbench, when set, is a pgbench script run instead of HTTP requests
	// (a floor of the database's own: pgbench.go).
	pgbench string
}

type worker struct {
	id    int
	n     int
	keys  []string // replay: completed keys to cycle through
	storm string
}

func main() {
	var (
		serverBin   = flag.String("server", "", "benchserver binary to start")
		dbURL       = flag.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL the server uses")
		duration    = flag.Duration("duration", 3*time.Second, "length of one measured run")
		rounds      = flag.Int("rounds", 3, "rounds; each round runs every scenario at every concurrency")
		concFlag    = flag.String("concurrency", "1,8,32", "client concurrencies")
		stormKeys   = flag.Int("storm-keys", 20, "keys per storm round (200 concurrent requests each)")
		stormSize   = flag.Int("storm-size", 200, "concurrent requests per storm key")
		outPath     = flag.String("out", "", "write the markdown table here too")
		svgPath     = flag.String("svg", "", "write a latency chart (SVG) here")
		pool        = flag.Int("pool", 40, "server connection pool size")
		only        = flag.String("scenarios", "", "comma-separated scenarios to run (default all; \"storm\" names the storm)")
		profDir     = flag.String("profile", "", "write a server CPU profile of every run into this directory")
		scaleFlag   = flag.String("scale", "", "record counts for the scale curve, e.g. 10000,1000000,10000000 (none: skip)")
		sweepRows   = flag.Int("sweep", 0, "expired records for the sweeper-under-traffic run (0: skip)")
		sweepBudget = flag.Float64("sweep-budget", 0, "the sweeper's SweeperConfig.Budget in that run (0: its default)")
		sweepReuse  = flag.Bool("sweep-reuse", false, "sweep the expired records an earlier run left instead of loading them")
		scaleRounds = flag.Int("scale-rounds", 2, "rounds per point of the scale curve (each round runs baseline, atomic and replay for -duration); more rounds span more of a checkpoint cycle")
		scalePairDB = flag.String("scale-pair", "", "a second database, holding a table an earlier -scale run loaded: measure it against -database-url's in alternating rounds of the same run (-scale-rounds, -duration), without loading or checkpointing either")
		scaleReuse  = flag.Bool("scale-reuse", false, "keep the records an earlier -scale run loaded (a 50 M table loaded once, measured later)")
		sweepBatch  = flag.Int("sweep-batch", 0, "the sweeper's SweeperConfig.BatchSize in that run (0: its default)")
		peersFlag   = flag.String("peers", "", "other servers of the bench spec to measure, name=binary,... (bench/peers/build.sh builds ogen's and oapi-codegen's)")
		pgbenchDir  = flag.String("pgbench", "", "directory of pgbench scripts (bench/pgbench): measure the database floors base.sql and lease.sql in the same rounds")
	)
	flag.Parse()
	if *serverBin == "" || *dbURL == "" {
		fmt.Fprintln(os.Stderr, "benchload: -server and -database-url (or DATABASE_URL) are required")
		os.Exit(2)
	}
	concs, err := parseInts(*concFlag)
	if err != nil {
		fatalf("-concurrency: %v", err)
	}

	// Whatever benchload started is stopped however it ends (proc.go).
	catchSignals()
	defer runCleanups()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			fatalf("%v", err)
		}
		os.Setenv("PPROF", "1")
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	loadStart := loadAvg()
	srv, err := startServer(ctx, *serverBin, *dbURL, *pool)
	if err != nil {
		fatalf("%v", err)
	}
	defer srv.stop()

	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     time.Minute,
		},
	}
	b := &bench{client: client, srv: srv, db: *dbURL, profDir: *profDir,
		start:   func(env ...string) (*server, error) { return startServer(ctx, *serverBin, *dbURL, *pool, env...) },
		startOn: func(db string) (*server, error) { return startServer(ctx, *serverBin, db, *pool) }}
	defer b.stopExtra()

	if b.postmaster, err = postmaster(ctx, *dbURL); err != nil {
		fatalf("database: %v", err)
	}
	replayKeys, err := b.prepareReplayKeys(2000)
	if err != nil {
		fatalf("preparing replay keys: %v", err)
	}
	b.replayKeys = replayKeys

	scenarios := []scenario{
		{name: "handwritten", path: "/handwritten", want: []int{201}},
		{name: "baseline", path: "/baseline", want: []int{201}},
		{name: "atomic", path: "/atomic", key: newKey, want: []int{201}},
		{name: "lease", path: "/lease", key: newKey, want: []int{201}},
		{name: "replay", path: "/atomic", key: replayKey, want: []int{201}},
		{name: "naive", path: "/naive", key: newKey, want: []int{201}},
		// The floor of any replay: the naive middleware's, its key's stored
		// response written back, with no fingerprint and no check.
		{name: "naive-replay", path: "/naive", key: replayKey, want: []int{201}},
		{name: "fiber", path: "/fiber", fiber: true, key: newKey, want: []int{201}},
	}
	if os.Getenv("REDIS_URL") != "" {
		// The server serves the same operations under /redis/ with the
		// Redis fast path (benchserver); the replay keys are the same ones,
		// cached by their first replay there.
		scenarios = append(scenarios,
			scenario{name: "atomic-redis", path: "/redis/atomic", key: newKey, want: []int{201}},
			scenario{name: "replay-redis", path: "/redis/atomic", key: replayKey, want: []int{201}},
			scenario{name: "naive-replay-redis", path: "/naive/redis", key: replayKey, want: []int{201}})
	}
	peers, err := parsePeers(*peersFlag)
	if err != nil {
		fatalf("-peers: %v", err)
	}
	for _, p := range peers {
		if len(want) > 0 && !want[p.name] {
			continue
		}
		// A peer shares the database and the table benchserver created.
		srv, err := startServer(ctx, p.bin, *dbURL, *pool)
		if err != nil {
			fatalf("peer %s: %v", p.name, err)
		}
		defer srv.stop()
		scenarios = append(scenarios, scenario{name: p.name, path: "/baseline", on: srv, want: []int{201}})
	}
	if *pgbenchDir != "" {
		for _, f := range []string{"base", "lease"} {
			scenarios = append(scenarios, scenario{name: "pgbench-" + f, pgbench: filepath.Join(*pgbenchDir, f+".sql")})
		}
	}
	if len(want) > 0 {
		var keep []scenario
		for _, s := range scenarios {
			if want[s.name] {
				keep = append(keep, s)
			}
		}
		scenarios = keep
	}

	// One uncounted second of every scenario first: the first run after
	// start-up (connections, pools, caches) would otherwise be measured
	// in round 1 only for whichever scenario comes first.
	for _, s := range scenarios {
		if _, err := b.measure(s, concs[len(concs)-1], time.Second, replayKeys, 0); err != nil {
			fatalf("warm-up %s: %v", s.name, err)
		}
	}
	results := map[string][]run{} // scenario/conc -> runs
	for r := 0; r < *rounds; r++ {
		for _, c := range concs {
			// Rotate the order every round so no scenario always runs first.
			for i := range scenarios {
				s := scenarios[(i+r)%len(scenarios)]
				res, err := b.measure(s, c, *duration, replayKeys, r+1)
				if err != nil {
					fatalf("%s c=%d: %v", s.name, c, err)
				}
				results[rkey(s.name, c)] = append(results[rkey(s.name, c)], res)
				fmt.Fprintf(os.Stderr, "round %d  %-8s c=%-3d %8.0f req/s  p50 %6.2fms  p99 %6.2fms  %5.0f allocs/req  %d cache fallbacks\n",
					r+1, s.name, c, res.rps(), ms(res.pct(50)), ms(res.pct(99)), res.allocsPerReq(), res.fallbacks)
			}
		}
	}

	var storms []stormResult
	if len(want) == 0 || want["storm"] {
		for _, procs := range []int{1, 2} {
			for _, tg := range stormTargets {
				res, err := b.storm(tg, procs, *stormKeys, *stormSize, *rounds)
				if err != nil {
					fatalf("storm %s, %d processes: %v", tg.name, procs, err)
				}
				fmt.Fprintf(os.Stderr, "storm %-8s %d process(es): effects per key %d..%d, handler runs per key %.2f, p99 %.2fms\n",
					tg.name, procs, res.minEff, res.maxEff, res.runsPerKey(), ms(percentile(res.lat, 99)))
				storms = append(storms, res)
			}
		}
	}
	if os.Getenv("REDIS_URL") != "" && (len(want) == 0 || want["storm"] || want["storm-redis"]) {
		// The same storms through the Redis fast path; then, with a Redis
		// of the storm's own, that Redis killed (kill -9) mid-storm.
		tg := stormTarget{name: "idemgen-redis", path: "/redis/atomic", counter: "atomic", idemgen: true}
		for _, procs := range []int{1, 2} {
			res, err := b.storm(tg, procs, *stormKeys, *stormSize, *rounds)
			if err != nil {
				fatalf("storm %s, %d processes: %v", tg.name, procs, err)
			}
			fmt.Fprintf(os.Stderr, "storm %-8s %d process(es): effects per key %d..%d, handler runs per key %.2f, p50 %.2fms p99 %.2fms, statuses %v, cache %v, pool %v, waits %v\n",
				tg.name, procs, res.minEff, res.maxEff, res.runsPerKey(), ms(percentile(res.lat, 50)), ms(percentile(res.lat, 99)), res.statuses, res.cache, res.pool, res.waits)
			storms = append(storms, res)
		}
		if sh := os.Getenv("REDIS_SH"); sh != "" {
			res, err := b.stormRedisKilled(sh, *stormKeys, *stormSize)
			if err != nil {
				fatalf("storm with Redis killed: %v", err)
			}
			fmt.Fprintf(os.Stderr, "storm %s %d process(es): effects per key %d..%d, handler runs per key %.2f, p50 %.2fms p99 %.2fms, statuses %v, cache %v, pool %v, waits %v\n",
				res.target.name, res.procs, res.minEff, res.maxEff, res.runsPerKey(), ms(percentile(res.lat, 50)), ms(percentile(res.lat, 99)), res.statuses, res.cache, res.pool, res.waits)
			storms = append(storms, res)
		}
	}
	var mismatches []mismatchResult
	if len(want) == 0 || want["mismatch"] {
		for _, tg := range stormTargets {
			m, err := b.mismatch(tg)
			if err != nil {
				fatalf("reused key, %s: %v", tg.name, err)
			}
			mismatches = append(mismatches, m)
		}
	}
	var scale []scalePoint
	if sizes, _ := parseInts(*scaleFlag); len(sizes) > 0 && (len(want) == 0 || want["scale"]) {
		if scale, err = b.scaleCurve(sizes, *duration, *scaleRounds, *scaleReuse); err != nil {
			fatalf("scale: %v", err)
		}
	}
	var pair []pairSide
	if *scalePairDB != "" && (len(want) == 0 || want["scale"]) {
		if pair, err = b.scalePair(*scalePairDB, *duration, *scaleRounds); err != nil {
			fatalf("scale pair: %v", err)
		}
	}
	var sweep *sweepResult
	if *sweepRows > 0 && (len(want) == 0 || want["sweep"]) {
		if sweep, err = b.sweepUnderTraffic(*sweepRows, max(*rounds, 5), *duration, *sweepBudget, *sweepBatch, *sweepReuse); err != nil {
			fatalf("sweep: %v", err)
		}
	}

	var md strings.Builder
	writeTable(&md, scenarios, concs, results, storms, mismatches)
	writeScale(&md, scale, sweep)
	writePair(&md, pair)
	fmt.Fprintf(&md, "\nLoad average (1, 5, 15 min) at the start: %s; at the end: %s.\n", loadStart, loadAvg())
	fmt.Print(md.String())
	if *outPath != "" {
		if err := os.WriteFile(*outPath, []byte(md.String()), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, []byte(chart(scenarios, concs, results, storms)), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	for _, st := range storms {
		if st.target.idemgen && (st.maxEff != 1 || st.minEff != 1) {
			fatalf("storm (%d processes): idemgen committed %d..%d effects per key, want exactly 1", st.procs, st.minEff, st.maxEff)
		}
	}
}

// loadAvg is the machine's load average (Linux), or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// fatalf prints the error, stops the servers benchload started and exits 1.
func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchload: "+format+"\n", args...)
	exit(1)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func rkey(name string, c int) string { return fmt.Sprintf("%s/%d", name, c) }

func newKey(*worker) string { return uuid.Must(uuid.NewV7()).String() }

// replayKey cycles through the completed keys.
func replayKey(w *worker) string { return w.keys[w.n%len(w.keys)] }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type bench struct {
	client *http.Client
	srv    *server
	db     string
	seq    atomic.Int64
	// profDir, when set, receives a server CPU profile of every run.
	profDir string
	// start starts another server process (storms with two processes);
	// extra is the one it started.
	start func(env ...string) (*server, error)
	extra *server
	// startOn starts another server process on another database (-scale-pair).
	startOn func(db string) (*server, error)
	// replayKeys are completed keys with their bodies in replayBodies.
	replayKeys []string
	// postmaster is the database cluster's first process (cpu.go).
	postmaster string
}

func (b *bench) stopExtra() {
	if b.extra != nil {
		b.extra.stop()
	}
}

// url is where a request of s goes: to srv unless s has a server of its own.
func (s scenario) url(srv *server) string {
	if s.on != nil {
		srv = s.on
	}
	if s.fiber {
		return srv.fiber + s.path
	}
	return srv.base + s.path
}

type run struct {
	n       int
	elapsed time.Duration
	lat     []time.Duration // sorted
	allocs  uint64
	// fallbacks counts the Redis engine's requests whose cache call failed
	// (Outcome.Cache "fallback": a time-out, most often, on a busy machine).
	fallbacks int64
	// cpu is what the server, the database and the client spent (cpu.go).
	cpu cpuTimes
}

func (r run) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r run) pct(p float64) time.Duration { return percentile(r.lat, p) }

func (r run) allocsPerReq() float64 {
	if r.n == 0 {
		return 0
	}
	return float64(r.allocs) / float64(r.n)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func (b *bench) body() []byte {
	n := b.seq.Add(1)
	return []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR","reference":"bench-%d"}`, 100+n%900, n))
}

// post sends one request to url and checks its status.
func (b *bench) post(url, key string, body []byte, want []int) (int, error) {
	status, got, err := b.exchange(url, key, body)
	if err != nil {
		return 0, err
	}
	for _, w := range want {
		if status == w {
			return status, nil
		}
	}
	return status, fmt.Errorf("POST %s: status %d, want %v: %.300s", url, status, want, got)
}

// exchange sends one request to url and returns the status and body.
func (b *bench) exchange(url, key string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// replayBodies holds the body each replay key was first sent with, so a
// replay repeats it exactly.
var replayBodies sync.Map

func (b *bench) prepareReplayKeys(n int) ([]string, error) {
	paths := []string{"/atomic", "/naive"}
	if os.Getenv("REDIS_URL") != "" {
		// After /naive: a key the table holds is cached by its first
		// request here.
		paths = append(paths, "/naive/redis")
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = uuid.Must(uuid.NewV7()).String()
		body := []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR","reference":"replay-%d"}`, 100+i, i))
		replayBodies.Store(keys[i], body)
		for _, p := range paths {
			if _, err := b.post(b.srv.base+p, keys[i], body, []int{201}); err != nil {
				return nil, err
			}
		}
	}
	return keys, nil
}

func (b *bench) measure(s scenario, conc int, d time.Duration, replayKeys []string, round int) (run, error) {
	if s.pgbench != "" {
		return b.pgbench(s.pgbench, conc, d)
	}
	srv := b.srv
	if s.on != nil {
		srv = s.on
	}
	st0, err := b.stats(srv)
	before := st0.Mallocs
	if err != nil {
		return run{}, err
	}
	cpu0 := b.cpuNow(srv)
	profDone := make(chan struct{})
	if b.profDir == "" || s.on != nil { // the peers serve no profiles
		close(profDone)
	} else {
		go func() {
			defer close(profDone)
			secs := max(int(d/time.Second)-1, 1)
			resp, err := b.client.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", srv.base, secs))
			if err != nil {
				fmt.Fprintf(os.Stderr, "profile: %v\n", err)
				return
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			name := fmt.Sprintf("%s/%s-c%d-r%d.pprof", b.profDir, s.name, conc, round)
			if err := os.WriteFile(name, data, 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "profile: %v\n", err)
			}
		}()
	}
	deadline := time.Now().Add(d)
	res, err := b.drive(s, conc, replayKeys, func() bool { return time.Now().Before(deadline) })
	<-profDone
	if err != nil {
		return run{}, err
	}
	res.cpu = b.cpuNow(srv).sub(cpu0)
	st1, err := b.stats(srv)
	if err != nil {
		return run{}, err
	}
	// The two /_stats calls allocate too; they are noise next to thousands
	// of requests and are not subtracted.
	res.allocs = st1.Mallocs - before
	res.fallbacks = st1.Cache["fallback"] - st0.Cache["fallback"]
	return res, nil
}

// drive sends s's requests from conc clients while more() holds.
func (b *bench) drive(s scenario, conc int, replayKeys []string, more func() bool) (run, error) {
	var (
		mu      sync.Mutex
		lat     []time.Duration
		firstEr error
		wg      sync.WaitGroup
	)
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			w := &worker{id: id, n: id * 7919, keys: replayKeys}
			local := make([]time.Duration, 0, 4096)
			for more() {
				key := ""
				if s.key != nil {
					key = s.key(w)
				}
				body := b.body()
				if s.name == "replay" || s.name == "replay-redis" {
					v, _ := replayBodies.Load(key)
					body = v.([]byte)
				}
				t0 := time.Now()
				_, err := b.post(s.url(b.srv), key, body, s.want)
				local = append(local, time.Since(t0))
				w.n++
				if err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstEr != nil {
		return run{}, firstEr
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return run{n: len(lat), elapsed: elapsed, lat: lat}, nil
}
