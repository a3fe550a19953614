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
// -scenarios runs a subset (e.g. "atomic,replay"; "storm" names the storm)
// and -profile DIR saves a server CPU profile of every run, for pprof.
//
// It never fails on a slow result: it prints numbers, not verdicts. It exits
// non-zero only when the server misbehaves (a storm executing a key twice,
// an unexpected status).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

type scenario struct {
	name string
	// path is the operation's route; key says how a request picks its key.
	path string
	key  func(w *worker) string
	// want is the status every request must get.
	want []int
}

type worker struct {
	id    int
	n     int
	keys  []string // replay: completed keys to cycle through
	storm string
}

func main() {
	var (
		serverBin = flag.String("server", "", "benchserver binary to start")
		dbURL     = flag.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL the server uses")
		duration  = flag.Duration("duration", 3*time.Second, "length of one measured run")
		rounds    = flag.Int("rounds", 3, "rounds; each round runs every scenario at every concurrency")
		concFlag  = flag.String("concurrency", "1,8,32", "client concurrencies")
		stormKeys = flag.Int("storm-keys", 20, "keys per storm round (200 concurrent requests each)")
		stormSize = flag.Int("storm-size", 200, "concurrent requests per storm key")
		outPath   = flag.String("out", "", "write the markdown table here too")
		svgPath   = flag.String("svg", "", "write a latency chart (SVG) here")
		pool      = flag.Int("pool", 40, "server connection pool size")
		only      = flag.String("scenarios", "", "comma-separated scenarios to run (default all; \"storm\" names the storm)")
		profDir   = flag.String("profile", "", "write a server CPU profile of every run into this directory")
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
	base, stop, err := startServer(ctx, *serverBin, *dbURL, *pool)
	if err != nil {
		fatalf("%v", err)
	}
	defer stop()

	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     time.Minute,
		},
	}
	b := &bench{client: client, base: base, db: *dbURL, profDir: *profDir}

	replayKeys, err := b.prepareReplayKeys(2000)
	if err != nil {
		fatalf("preparing replay keys: %v", err)
	}

	scenarios := []scenario{
		{name: "baseline", path: "/baseline", want: []int{201}},
		{name: "atomic", path: "/atomic", key: newKey, want: []int{201}},
		{name: "lease", path: "/lease", key: newKey, want: []int{201}},
		{name: "replay", path: "/atomic", key: func(w *worker) string {
			k := w.keys[w.n%len(w.keys)]
			return k
		}, want: []int{201}},
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
				fmt.Fprintf(os.Stderr, "round %d  %-8s c=%-3d %8.0f req/s  p50 %6.2fms  p99 %6.2fms  %5.0f allocs/req\n",
					r+1, s.name, c, res.rps(), ms(res.pct(50)), ms(res.pct(99)), res.allocsPerReq())
			}
		}
	}

	storm := stormResult{statuses: map[int]int{}, minExec: 1, maxExec: 1}
	if len(want) == 0 || want["storm"] {
		storm, err = b.storm(*stormKeys, *stormSize, *rounds)
		if err != nil {
			fatalf("storm: %v", err)
		}
	}

	var md strings.Builder
	writeTable(&md, scenarios, concs, results, storm)
	fmt.Print(md.String())
	if *outPath != "" {
		if err := os.WriteFile(*outPath, []byte(md.String()), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, []byte(chart(scenarios, concs, results, storm)), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	if storm.maxExec != 1 || storm.minExec != 1 {
		fatalf("storm: executions per key ranged %d..%d, want exactly 1", storm.minExec, storm.maxExec)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchload: "+format+"\n", args...)
	os.Exit(1)
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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startServer runs the server binary on a free loopback port and waits until
// it answers.
func startServer(ctx context.Context, bin, dbURL string, pool int) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "ADDR="+addr, fmt.Sprintf("POOL_SIZE=%d", pool))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/_stats")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base, stop, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return "", nil, errors.New("server did not answer /_stats within 30s")
}

type bench struct {
	client *http.Client
	base   string
	db     string
	seq    atomic.Int64
	// profDir, when set, receives a server CPU profile of every run.
	profDir string
}

type run struct {
	n       int
	elapsed time.Duration
	lat     []time.Duration // sorted
	allocs  uint64
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

// post sends one request and checks its status.
func (b *bench) post(path, key string, body []byte, want []int) (int, error) {
	req, err := http.NewRequest(http.MethodPost, b.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if resp.StatusCode == w {
			return resp.StatusCode, nil
		}
	}
	return resp.StatusCode, fmt.Errorf("POST %s: status %d, want %v", path, resp.StatusCode, want)
}

func (b *bench) serverMallocs() (uint64, error) {
	resp, err := b.client.Get(b.base + "/_stats")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var s struct{ Mallocs uint64 }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return 0, err
	}
	return s.Mallocs, nil
}

// replayBodies holds the body each replay key was first sent with, so a
// replay repeats it exactly.
var replayBodies sync.Map

func (b *bench) prepareReplayKeys(n int) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = uuid.Must(uuid.NewV7()).String()
		body := []byte(fmt.Sprintf(`{"amount":%d,"currency":"EUR","reference":"replay-%d"}`, 100+i, i))
		replayBodies.Store(keys[i], body)
		if _, err := b.post("/atomic", keys[i], body, []int{201}); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (b *bench) measure(s scenario, conc int, d time.Duration, replayKeys []string, round int) (run, error) {
	before, err := b.serverMallocs()
	if err != nil {
		return run{}, err
	}
	profDone := make(chan struct{})
	if b.profDir == "" {
		close(profDone)
	} else {
		go func() {
			defer close(profDone)
			secs := max(int(d/time.Second)-1, 1)
			resp, err := b.client.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", b.base, secs))
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
	var (
		mu      sync.Mutex
		lat     []time.Duration
		firstEr error
		wg      sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			w := &worker{id: id, n: id * 7919, keys: replayKeys}
			local := make([]time.Duration, 0, 4096)
			for time.Now().Before(deadline) {
				key := ""
				if s.key != nil {
					key = s.key(w)
				}
				body := b.body()
				if s.name == "replay" {
					v, _ := replayBodies.Load(key)
					body = v.([]byte)
				}
				t0 := time.Now()
				_, err := b.post(s.path, key, body, s.want)
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
	<-profDone
	if firstEr != nil {
		return run{}, firstEr
	}
	after, err := b.serverMallocs()
	if err != nil {
		return run{}, err
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	// The two /_stats calls allocate too; they are noise next to thousands
	// of requests and are not subtracted.
	return run{n: len(lat), elapsed: elapsed, lat: lat, allocs: after - before}, nil
}

type stormResult struct {
	keys             int
	lat              []time.Duration
	statuses         map[int]int
	minExec, maxExec int
}

// storm sends size concurrent requests with one key, for keys keys per
// round, and counts the business executions of every key in the database.
func (b *bench) storm(keys, size, rounds int) (stormResult, error) {
	res := stormResult{statuses: map[int]int{}, minExec: 1 << 30}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.db)
	if err != nil {
		return res, err
	}
	defer conn.Close(ctx)
	var mu sync.Mutex
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			key := uuid.Must(uuid.NewV7()).String()
			body := b.body()
			var wg sync.WaitGroup
			gate := make(chan struct{})
			var firstErr error
			for i := 0; i < size; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					t0 := time.Now()
					status, err := b.post("/atomic", key, body, []int{201, 409})
					d := time.Since(t0)
					mu.Lock()
					defer mu.Unlock()
					res.lat = append(res.lat, d)
					res.statuses[status]++
					if err != nil && firstErr == nil {
						firstErr = err
					}
				}()
			}
			close(gate)
			wg.Wait()
			if firstErr != nil {
				return res, firstErr
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM bench_payments WHERE idempotency_key = $1", key).Scan(&n); err != nil {
				return res, err
			}
			res.minExec = min(res.minExec, n)
			res.maxExec = max(res.maxExec, n)
			res.keys++
		}
	}
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	return res, nil
}
