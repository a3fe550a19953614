package natsjs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/internal/natstest"
	"github.com/idemgen/idemgen/runtime/natsjs"
)

// BenchmarkRelay measures relay throughput (events/s) from PostgreSQL to an
// in-process JetStream stream (file storage), by batch size. One op is one
// event published and deleted from the outbox; enqueueing is not timed.
func BenchmarkRelay(b *testing.B) {
	for _, size := range []int{1, 10, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			db := newDB(b)
			js, _ := setup(b, natstest.Server(b))
			relay := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{BatchSize: size})
			b.StopTimer()
			enqueueN(b, db, fmt.Sprintf("bench-%d", b.N), b.N, 100)
			ctx := context.Background()
			start := time.Now()
			b.StartTimer()
			for done := 0; done < b.N; {
				n, err := relay.RunOnce(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					b.Fatalf("relay stalled at %d of %d", done, b.N)
				}
				done += n
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkInbox measures the inbox's cost per message: the same handler
// (one INSERT in its own transaction) run plainly and through events.Handle.
// Compare the two sub-benchmarks' ns/op from one run.
func BenchmarkInbox(b *testing.B) {
	db := newDB(b)
	ctx := context.Background()
	run := 0
	handler := func(id string) func(ctx context.Context, tx pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ($1, 1)`, id)
			return err
		}
	}
	b.Run("handler=plain", func(b *testing.B) {
		run++
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprintf("plain-%d-%d", run, i)
			tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			if err != nil {
				b.Fatal(err)
			}
			if err := handler(id)(ctx, tx); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handler=inbox", func(b *testing.B) {
		run++
		ev := newEvent("pay.created", 1)
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprintf("inbox-%d-%d", run, i)
			ev.SetID(id)
			out, err := events.Handle(ctx, db, "ledger", ev, handler(id))
			if err != nil || out != events.Processed {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("handler=inbox-duplicate", func(b *testing.B) {
		// A redelivery: the inbox answers without running the handler.
		ev := newEvent("pay.created", 1)
		ev.SetID("dup")
		if _, err := events.Handle(ctx, db, "ledger", ev, handler("dup")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			out, err := events.Handle(ctx, db, "ledger", ev, handler("dup"))
			if err != nil || out != events.Duplicate {
				b.Fatal(out, err)
			}
		}
	})
}
