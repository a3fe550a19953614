package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// pairSide is one of the two databases a paired scale run compares: its
// server, connection and replay keys, and what it measured.
type pairSide struct {
	name       string
	db         string
	srv        *server
	conn       *pgx.Conn
	replayKeys []string
	point      scalePoint
}

// scalePair measures two tables side by side in the same minutes: the
// database benchload was given and other (one holding many more records,
// loaded earlier by a -scale run), each behind a server of its own. Each
// round runs baseline, atomic and replay on both, in turn, in an order
// that alternates from round to round, so that a machine whose speed
// drifts over minutes moves both alike. Unlike -scale it neither loads nor
// checkpoints: the tables are measured as they are, wherever the server's
// checkpoint cycle stands.
func (b *bench) scalePair(other string, d time.Duration, rounds int) ([]pairSide, error) {
	ctx := context.Background()
	srv, err := b.startOn(other)
	if err != nil {
		return nil, fmt.Errorf("server on the second database: %w", err)
	}
	defer srv.stop()
	sides := []*pairSide{
		{name: "first", db: b.db, srv: b.srv, replayKeys: b.replayKeys},
		{name: "second", db: other, srv: srv},
	}
	// measure and prepareReplayKeys act on b.srv (the keys are passed).
	mainSrv := b.srv
	defer func() { b.srv = mainSrv }()
	use := func(s *pairSide) { b.srv = s.srv }

	use(sides[1])
	if sides[1].replayKeys, err = b.prepareReplayKeys(len(b.replayKeys)); err != nil {
		return nil, fmt.Errorf("replay keys on the second database: %w", err)
	}
	scenarios := scaleScenarios()
	for _, s := range sides {
		if s.conn, err = pgx.Connect(ctx, s.db); err != nil {
			return nil, err
		}
		defer s.conn.Close(ctx)
		if s.point.records, err = countRecords(ctx, s.conn); err != nil {
			return nil, err
		}
		use(s)
		for _, sc := range scenarios {
			if _, err := b.measure(sc, 32, time.Second, s.replayKeys, 0); err != nil {
				return nil, fmt.Errorf("warm-up %s on the %s database: %w", sc.name, s.name, err)
			}
		}
	}
	for r := range max(rounds, 1) {
		for i := range scenarios {
			sc := scenarios[(i+r)%len(scenarios)]
			for j := range sides {
				s := sides[(j+r)%len(sides)]
				use(s)
				res, db, err := b.measureCounted(ctx, s.conn, sc, d, s.replayKeys, r+1)
				if err != nil {
					return nil, fmt.Errorf("%s on the %s database: %w", sc.name, s.name, err)
				}
				fmt.Fprintf(os.Stderr, "pair %s (%d records) %s r%d: %.0f req/s; per request %s; load %s\n",
					s.name, s.point.records, sc.name, r+1, res.rps(), db.per(res.n), loadAvg())
				s.point.add(sc.name, res, db)
			}
		}
	}
	return []pairSide{*sides[0], *sides[1]}, nil
}

// writePair reports a paired run: each side as a point of the scale
// curve, then the second side's rates over the first's, round by round.
func writePair(w io.Writer, sides []pairSide) {
	if len(sides) != 2 {
		return
	}
	writeScale(w, []scalePoint{sides[0].point, sides[1].point}, nil)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The %d-record table's rate over the %d-record table's, round by round (both measured in the same minutes):\n\n",
		sides[1].point.records, sides[0].point.records)
	fmt.Fprintln(w, "| scenario | median | per round |")
	fmt.Fprintln(w, "|---|---:|---|")
	for _, sc := range scaleScenarios() {
		name := sc.name
		a, b := sides[0].point.runs(name), sides[1].point.runs(name)
		var xs []float64
		var cells string
		for i := range min(len(a), len(b)) {
			x := b[i].rps() / a[i].rps()
			xs = append(xs, x)
			if i > 0 {
				cells += ", "
			}
			cells += fmt.Sprintf("%.2f", x)
		}
		fmt.Fprintf(w, "| %s | %.2f | %s |\n", name, median(xs), cells)
	}
}
