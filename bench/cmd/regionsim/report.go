package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem/schema"
)

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
	if err := schema.Migrate(ctx, single); err != nil {
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
