package idem

import "sync/atomic"

// Reading first, or inserting first. An atomic request can find out whether
// its key has a record in two ways:
//
//   - read first: one read before the transaction (preRead). A replay then
//     costs that one round trip and never runs the handler; a first
//     execution pays for the read: three round trips (the read; BEGIN with
//     the handler's first statement; the record with COMMIT).
//   - insert first: no read. The handler runs in its transaction and the
//     record's INSERT, sent with COMMIT, is the check: a key that has a
//     record makes it fail on the primary key, the transaction rolls back
//     and the request reads and answers what is stored (atomicMode.execute,
//     the same path as a duplicate racing in from another process). A
//     first execution costs two round trips; a replay runs the handler in
//     a transaction that rolls back, and costs more than a read would.
//
// Lease mode (lease.go) makes the same choice between the read and its
// claim: a claim that finds the key held still locks the row and commits
// that write, so a replay costs more than a read there too, and a new key
// one round trip less.
//
// Both are correct: the primary key decides, and an atomic handler must
// not act outside its transaction (docs/design.md), which is what lets a
// duplicate in another process run it too. Which one is cheaper depends on
// how often a key already has a record, so the engine measures that per
// operation and inserts first while records are rarely found: a running
// average of "a record was there" over the operation's recent keyed
// requests, below guessInsertBelow. It starts at "always found" (read
// first), so an operation inserts first only once it has served about a
// hundred first executions and few replays. A wrong guess costs time,
// never an answer.
//
// With a cache (Config.Cache) the guess also decides whether a request asks
// the cache at all (atomicMode.asksCache): the cache is a read, worth its
// round trip (and the write of the outcome after) only where reading first
// is. A request that asks it inserts first when the cache had nothing (its
// in-flight marker placed). The guess learns from every keyed request: a
// record found by the replay read or won by a duplicate (atomicMode), an
// answer from the cache, and a duplicate handed its leader's outcome in
// this process (serveKeyed) count as "found".

const (
	guessScale       = 1 << 16         // fixed point: guessScale is "always found"
	guessShift       = 5               // weight of one observation: 1/32
	guessInsertBelow = guessScale / 16 // insert first below 6.25 % found
)

// readGuess is one operation's running share of keyed requests whose key
// had a record, in guessScale units, kept in the operation's opState
// (config.go). Updates may race and lose one another's observation: it is
// an estimate, not a count. pinned, set by tests before any request
// (export_test.go), fixes the answer: 1 insert first, -1 read first.
type readGuess struct {
	found  atomic.Int64
	pinned int
}

// insertFirst reports whether the next request should skip the read.
func (g *readGuess) insertFirst() bool {
	if g.pinned != 0 {
		return g.pinned > 0
	}
	return g.found.Load() < guessInsertBelow
}

// observe adds one request: whether its key had a record (or another
// request's record won it).
func (g *readGuess) observe(found bool) {
	v := g.found.Load()
	var x int64
	if found {
		x = guessScale
	}
	g.found.Store(v + (x-v)>>guessShift)
}
