package idemseal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/pgtest"
)

// BenchmarkSealCost measures what sealing adds to a request: one atomic-mode
// operation served over HTTP against PostgreSQL by two engines on one
// table, one without a Sealer and one with, executing new keys and
// replaying a stored response, for a small and a large response body.
// Every iteration sends one request to each engine, in alternating order,
// so that load on the machine falls on both alike; it reports each one's
// time per request, their ratio (sealed/plain) and the size PostgreSQL
// stores for a body (pg_column_size: plain bodies may be compressed, sealed
// ones cannot be).
func BenchmarkSealCost(b *testing.B) {
	db := pgtest.New(b, pgtest.Options{})
	plain := newSealedService(b, db, nil)
	sealed := newSealedService(b, db, sealerOf(b, newKey(b, "k1")))
	ctx := context.Background()
	for _, size := range []int{256, 16 << 10} {
		plain.pad, sealed.pad = size, size
		for _, replay := range []bool{false, true} {
			name := fmt.Sprintf("body=%d/execute", size)
			keys := map[*sealedService]string{plain: uuid.NewString(), sealed: uuid.NewString()}
			tenants := map[*sealedService]string{plain: "plain", sealed: "sealed"}
			if replay {
				name = fmt.Sprintf("body=%d/replay", size)
				for s, k := range keys {
					s.post("createThing", tenants[s], k)
				}
			}
			b.Run(name, func(b *testing.B) {
				spent := map[*sealedService]time.Duration{}
				i := 0
				for b.Loop() {
					order := []*sealedService{plain, sealed}
					if i%2 == 1 {
						order[0], order[1] = sealed, plain
					}
					i++
					for _, s := range order {
						key := keys[s]
						if !replay {
							key = uuid.NewString()
						}
						start := time.Now()
						if a := s.post("createThing", tenants[s], key); a.status != 201 {
							b.Fatalf("%d %s", a.status, a.body)
						}
						spent[s] += time.Since(start)
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(spent[plain].Nanoseconds())/n, "ns/plain")
				b.ReportMetric(float64(spent[sealed].Nanoseconds())/n, "ns/sealed")
				b.ReportMetric(float64(spent[sealed])/float64(spent[plain]), "sealed/plain")
				for s, unit := range map[*sealedService]string{plain: "B-stored/plain", sealed: "B-stored/sealed"} {
					var size float64
					if err := db.QueryRow(ctx, `SELECT avg(pg_column_size(response_body)) FROM idem_records WHERE tenant = $1 AND idempotency_key = $2`,
						tenants[s], keys[s]).Scan(&size); err == nil {
						b.ReportMetric(size, unit)
					}
				}
			})
		}
	}
}
