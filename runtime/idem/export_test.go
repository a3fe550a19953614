package idem

import (
	"time"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// PinInsertFirst fixes how e serves op's atomic and lease requests, before
// any request: insert (or claim) first (true) or read first (false),
// whatever the guess would say (guess.go).
func PinInsertFirst(e *Engine, op *Operation, insert bool) {
	s, _ := e.check(op)
	g := &s.guess
	g.pinned = -1
	if insert {
		g.pinned = 1
	}
}

// InsertsFirst reports whether e's next atomic request of op inserts first
// (a lease request, claims first).
func InsertsFirst(e *Engine, op *Operation) bool {
	s, _ := e.check(op)
	return s.guess.insertFirst()
}

// RecordRead is what the engine keeps of a GetRecord row (recordOf).
type RecordRead struct {
	SameKey, SameRequest, Expired, LeaseLapsed bool
	LeaseLeft, Left                            time.Duration
	Status                                     int32
	Headers, Body                              string
}

// ReadRecordRow is recordOf(row), for comparing with the database's own
// arithmetic.
func ReadRecordRow(row *store.GetRecordRow) RecordRead {
	r := recordOf(row)
	return RecordRead{SameKey: r.sameKey, SameRequest: r.sameRequest, Expired: r.expired, LeaseLapsed: r.leaseLapsed,
		LeaseLeft: r.leaseLeft, Left: r.left, Status: r.status, Headers: string(r.headers), Body: string(r.body)}
}
