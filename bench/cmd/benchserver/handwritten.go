package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The hand-written variant: the operation as a Go service writes it without
// a generator or an idempotency layer — net/http's ServeMux, encoding/json,
// the spec's checks by hand and the same business write (one row inserted
// in a transaction of its own). benchload reports every other variant as a
// ratio of this one.

// paymentIn and paymentOut are the request and response bodies, declared by
// hand.
type paymentIn struct {
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

type paymentOut struct {
	ID        int64  `json:"id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

// handwritten serves POST /handwritten. write is the business write (the
// pool's in benchserver).
func handwritten(write func(context.Context, paymentIn) (int64, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in paymentIn
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, "invalid body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if in.Amount < 1 || in.Currency == "" || in.Reference == "" {
			http.Error(w, "amount (at least 1), currency and reference are required", http.StatusBadRequest)
			return
		}
		invocations["handwritten"].Add(1)
		id, err := write(r.Context(), in)
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(paymentOut{ID: id, Amount: in.Amount, Currency: in.Currency, Reference: in.Reference})
	}
}

// poolWrite is the hand-written variant's business write: the INSERT every
// variant makes, in a transaction of its own.
func poolWrite(pool *pgxpool.Pool) func(context.Context, paymentIn) (int64, error) {
	return func(ctx context.Context, in paymentIn) (id int64, err error) {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, insert, nil, in.Amount, in.Currency, in.Reference).Scan(&id)
		})
		return id, err
	}
}
