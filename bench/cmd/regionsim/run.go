package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

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
	_, err := local.admin.Exec(ctx, "ALTER SUBSCRIPTION "+schema.RegionSubscription(local.name, peer.name)+" "+verb)
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
