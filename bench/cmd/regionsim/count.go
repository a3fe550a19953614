package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
)

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
		schema.RegionSchema(of)+".idem_records").Scan(&d)
	return d, err
}

// count measures the phase's keys from both databases, then drains the
// compensations (a compensation reverses the losing region's payment).
func count(ctx context.Context, a, b *region, keys []string, res *result) error {
	paid, err := paidIn(ctx, []*region{a, b}, keys, "")
	if err != nil {
		return err
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
	live, err := paidIn(ctx, []*region{a, b}, keys, " AND NOT reversed")
	if err != nil {
		return err
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

// paidIn counts, per key of keys, the regions whose payments hold a row of
// it (and meet cond, an SQL condition appended to the query's WHERE).
func paidIn(ctx context.Context, regions []*region, keys []string, cond string) (map[string]int, error) {
	paid := map[string]int{}
	for _, r := range regions {
		rows, err := r.admin.Query(ctx, "SELECT idem_key FROM "+schema.RegionSchema(r.name)+".payments WHERE idem_key = ANY($1)"+cond, keys)
		if err != nil {
			return nil, err
		}
		ks, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			paid[k]++
		}
	}
	return paid, nil
}
