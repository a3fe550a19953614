package main

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
	"time"
)

// pooled merges the latencies of every round of one scenario and concurrency.
func pooled(runs []run) []time.Duration {
	var all []time.Duration
	for _, r := range runs {
		all = append(all, r.lat...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return all
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is the median over rounds of (scenario req/s ÷ baseline req/s in the
// same round): each ratio compares two runs made back to back.
func ratio(results map[string][]run, name string, c int) float64 {
	m, _ := ratioTo(results, name, "baseline", c)
	return m
}

// ratioTo is the median over rounds of (scenario req/s ÷ ref req/s in the
// same round), and the per-round ratios.
func ratioTo(results map[string][]run, name, ref string, c int) (float64, []float64) {
	base, cur := results[rkey(ref, c)], results[rkey(name, c)]
	var rs []float64
	for i := range cur {
		if i < len(base) && base[i].rps() > 0 {
			rs = append(rs, cur[i].rps()/base[i].rps())
		}
	}
	return median(rs), rs
}

func ratios(rs []float64) string {
	f := make([]string, len(rs))
	for i, r := range rs {
		f[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(f, " ")
}

// reference is the variant every other is a ratio of: the hand-written
// handler when it was measured, else idemgen's plain path (baseline).
func reference(scenarios []scenario) string {
	for _, s := range scenarios {
		if s.name == "handwritten" {
			return s.name
		}
	}
	return "baseline"
}

func writeTable(w io.Writer, scenarios []scenario, concs []int, results map[string][]run, storms []stormResult, mismatches []mismatchResult) {
	has := map[string]bool{}
	for _, s := range scenarios {
		has[s.name] = true
	}
	ref := reference(scenarios)
	fmt.Fprintf(w, "| scenario | concurrency | req/s (median) | × %s | per round | × baseline | × fiber | per round × fiber | p50 ms | p90 ms | p99 ms | allocs/req (server) | CPU µs/req: server + database + client |\n", ref)
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|")
	for _, c := range concs {
		for _, s := range scenarios {
			runs := results[rkey(s.name, c)]
			var rps, allocs []float64
			for _, r := range runs {
				rps = append(rps, r.rps())
				allocs = append(allocs, r.allocsPerReq())
			}
			lat := pooled(runs)
			mr, rr := ratioTo(results, s.name, ref, c)
			bcol := ""
			if has["baseline"] && ref != "baseline" {
				mb, _ := ratioTo(results, s.name, "baseline", c)
				bcol = fmt.Sprintf("%.2f", mb)
			}
			fcol, frounds := "", ""
			if has["fiber"] && s.name != ref && !s.fiber {
				mf, rf := ratioTo(results, s.name, "fiber", c)
				fcol, frounds = fmt.Sprintf("%.2f", mf), ratios(rf)
			}
			p50, p90, p99, alloc := fmt.Sprintf("%.2f", ms(percentile(lat, 50))), fmt.Sprintf("%.2f", ms(percentile(lat, 90))), fmt.Sprintf("%.2f", ms(percentile(lat, 99))), fmt.Sprintf("%.0f", median(allocs))
			if s.pgbench != "" {
				p50, p90, p99, alloc = "", "", "", "" // pgbench's transactions, no requests
			}
			fmt.Fprintf(w, "| %s | %d | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				s.name, c, median(rps), mr, ratios(rr), bcol, fcol, frounds, p50, p90, p99, alloc, cpuPerReq(runs))
		}
	}
	// Floors: the database's (pgbench), and a replay's (the naive
	// middleware's, which writes the stored response back unchecked).
	var floors [][2]string
	for _, p := range [][2]string{{ref, "pgbench-base"}, {"baseline", "pgbench-base"}, {"atomic", "pgbench-base"}, {"lease", "pgbench-lease"},
		{"replay", "naive-replay"}, {"replay-redis", "naive-replay-redis"}} {
		if has[p[0]] && has[p[1]] {
			floors = append(floors, p)
		}
	}
	if len(floors) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| against its floor | concurrency | median | per round |")
		fmt.Fprintln(w, "|---|---:|---:|---|")
		for _, c := range concs {
			for _, p := range floors {
				m, rs := ratioTo(results, p[0], p[1], c)
				fmt.Fprintf(w, "| %s ÷ %s | %d | %.2f | %s |\n", p[0], p[1], c, m, ratios(rs))
			}
		}
	}
	if len(storms) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| duplicate storm | processes | keys | requests | p50 ms | p99 ms | statuses | committed effects per key | handler runs per key |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---|---:|")
		for _, st := range storms {
			var codes []string
			for code, n := range st.statuses {
				codes = append(codes, fmt.Sprintf("%d×%d", n, code))
			}
			sort.Strings(codes)
			fmt.Fprintf(w, "| %s | %d | %d | %d | %.2f | %.2f | %s | %d..%d | %.2f |\n",
				st.target.name, st.procs, st.keys, len(st.lat), ms(percentile(st.lat, 50)), ms(percentile(st.lat, 99)),
				strings.Join(codes, ", "), st.minEff, st.maxEff, st.runsPerKey())
		}
	}
	if len(mismatches) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| same key, another body | first request | second request gets |")
		fmt.Fprintln(w, "|---|---:|---|")
		for _, m := range mismatches {
			fmt.Fprintf(w, "| %s | %d | %s |\n", m.target.name, m.first, m.verdict())
		}
	}
}

// writeScale writes the scale curve and the sweeper run, when measured.
func writeScale(w io.Writer, points []scalePoint, sw *sweepResult) {
	if len(points) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| records in idem_records | baseline req/s | atomic req/s | atomic × baseline | atomic p99 ms | replay req/s | replay × baseline | replay p99 ms |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, p := range points {
			res := map[string][]run{rkey("baseline", 32): p.baseline, rkey("atomic", 32): p.atomic, rkey("replay", 32): p.replay}
			rps := func(runs []run) float64 {
				var xs []float64
				for _, r := range runs {
					xs = append(xs, r.rps())
				}
				return median(xs)
			}
			fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n", p.records,
				rps(p.baseline), rps(p.atomic), ratio(res, "atomic", 32), ms(percentile(pooled(p.atomic), 99)),
				rps(p.replay), ratio(res, "replay", 32), ms(percentile(pooled(p.replay), 99)))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "What the database did per request (all rounds; the statistics lag by up to a second, page faults are its client backends' minor faults, 0 when /proc does not show them):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| records in idem_records | atomic WAL bytes | atomic full-page images | atomic page faults | replay page faults | replay buffer reads |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
		for _, p := range points {
			a, r := count(p.atomic), count(p.replay)
			fmt.Fprintf(w, "| %d | %.0f | %.2f | %.2f | %.2f | %.2f |\n", p.records,
				per(p.atomicDB.wal, a), per(p.atomicDB.fpi, a), per(p.atomicDB.faults, a),
				per(p.replayDB.faults, r), per(p.replayDB.heapRead+p.replayDB.idxRead, r))
		}
	}
	if sw != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Sweeper under traffic: %d expired records loaded (in %.0f s), batch %d, budget %.2f; atomic traffic at c=32, alone and with the sweeper running, in %d rounds of two windows (alone first in odd rounds, sweeping first in even ones).\n\n",
			sw.rows, sw.loadTime.Seconds(), sw.batch, sw.budget, len(sw.alone))
		fmt.Fprintln(w, "| | median | per round |")
		fmt.Fprintln(w, "|---|---:|---|")
		var thr, p99, rpsAlone, rpsDuring []float64
		for i := range sw.alone {
			a, d := sw.alone[i], sw.during[i]
			thr = append(thr, d.rps()/a.rps())
			p99 = append(p99, float64(d.pct(99))/float64(a.pct(99)))
			rpsAlone, rpsDuring = append(rpsAlone, a.rps()), append(rpsDuring, d.rps())
		}
		fmt.Fprintf(w, "| traffic req/s alone | %.0f | %s |\n", median(rpsAlone), ints(rpsAlone))
		fmt.Fprintf(w, "| traffic req/s while sweeping | %.0f | %s |\n", median(rpsDuring), ints(rpsDuring))
		fmt.Fprintf(w, "| throughput, sweeping ÷ alone | %.2f | %s |\n", median(thr), ratios(thr))
		fmt.Fprintf(w, "| p99, sweeping ÷ alone | %.2f | %s |\n", median(p99), ratios(p99))
		var del, rate []float64
		for i, n := range sw.deletedIn {
			del = append(del, float64(n))
			rate = append(rate, float64(n)/sw.during[i].elapsed.Seconds())
		}
		fmt.Fprintf(w, "| records deleted per window | %.0f | %s |\n", median(del), ints(del))
		fmt.Fprintf(w, "| deleted/s ÷ traffic inserts/s | %.2f | %s |\n", median(rate)/median(rpsDuring), ratios(divide(rate, rpsDuring)))
		fmt.Fprintf(w, "| load average after the round | | %s |\n", strings.Join(sw.loads, ", "))
		fmt.Fprintf(w, "\nAll windows pooled: p99 alone %.2f ms, sweeping %.2f ms (%.2f×). The pass deleted %d records and walked %d pages in %.1f s of sweeping (pauses included): %.0f records/s, against %.0f inserts/s of the traffic while sweeping; %d expired records left.\n",
			ms(percentile(pooled(sw.alone), 99)), ms(percentile(pooled(sw.during), 99)),
			float64(percentile(pooled(sw.during), 99))/float64(percentile(pooled(sw.alone), 99)),
			sw.deleted, sw.pages, sw.sweeping.Seconds(), float64(sw.deleted)/sw.sweeping.Seconds(), median(rpsDuring), sw.left)
		if sw.skipped > 0 {
			fmt.Fprintf(w, "Before the windows, without traffic, the pass walked the %d pages earlier runs had emptied (%.0f s).\n", sw.skipped, sw.skipTime.Seconds())
		}
	}
}

// count is the requests the runs answered.
func count(runs []run) int {
	n := 0
	for _, r := range runs {
		n += r.n
	}
	return n
}

// per is x per request of n (0 without requests).
func per(x int64, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(x) / float64(n)
}

func divide(xs, ys []float64) []float64 {
	q := make([]float64, len(xs))
	for i := range xs {
		q[i] = xs[i] / ys[i]
	}
	return q
}

func ints(xs []float64) string {
	f := make([]string, len(xs))
	for i, x := range xs {
		f[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(f, " ")
}

// chart draws p50 and p99 latency per scenario and concurrency as horizontal
// bars: one row each, the storm last.
func chart(scenarios []scenario, concs []int, results map[string][]run, storms []stormResult) string {
	type row struct {
		label    string
		p50, p99 float64
	}
	var rows []row
	for _, c := range concs {
		for _, s := range scenarios {
			lat := pooled(results[rkey(s.name, c)])
			rows = append(rows, row{fmt.Sprintf("%s  c=%d", s.name, c), ms(percentile(lat, 50)), ms(percentile(lat, 99))})
		}
	}
	for _, st := range storms {
		if st.procs == 1 {
			rows = append(rows, row{"storm " + st.target.name, ms(percentile(st.lat, 50)), ms(percentile(st.lat, 99))})
		}
	}
	maxv := 0.0
	for _, r := range rows {
		maxv = max(maxv, r.p99)
	}
	if maxv == 0 {
		maxv = 1
	}
	const (
		left, width, rowH, top = 150.0, 560.0, 26.0, 50.0
	)
	height := top + rowH*float64(len(rows)) + 50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", left+width+90, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">idemgen: latency per request (ms), p50 dark, p99 light</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">loopback HTTP, PostgreSQL with durable commits; lower is better</text>`+"\n")
	for i, r := range rows {
		y := top + rowH*float64(i)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+16, html.EscapeString(r.label))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="18" fill="#9ecae1"/>`+"\n", left, y+3, width*r.p99/maxv)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="18" fill="#2171b5"/>`+"\n", left, y+3, width*r.p50/maxv)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#333">%.1f / %.1f</text>`+"\n", left+width*r.p99/maxv+6, y+16, r.p50, r.p99)
	}
	axisY := top + rowH*float64(len(rows)) + 8
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#333"/>`+"\n", left, axisY, left+width, axisY)
	for i := 0; i <= 4; i++ {
		x := left + width*float64(i)/4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.1f ms</text>`+"\n", x, axisY+16, maxv*float64(i)/4)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
