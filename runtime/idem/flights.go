package idem

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// flights keeps atomic-mode duplicates inside one process from running
// their handlers side by side. The database decides which execution of a
// key commits (the record is written once, just before COMMIT, so a
// duplicate in another process can run its handler and then lose on the
// primary key); within a process, the engine lets one request per key
// execute at a time and makes the others wait for it (inFlight: wait, up to
// Policy.Wait) or for Config.LockTimeout (inFlight: reject) before reading
// what it stored. This is an optimisation and a courtesy, never an
// authority: nothing here decides whether a key ran.
type flights struct {
	mu   sync.Mutex
	m    map[flightKey]chan struct{}
	seed maphash.Seed
	// ended counts the flights that ended, by shard of their key. A request
	// reads its shard's count before its replay read; if the count moved by
	// the time it leads the key, a flight of that key may have committed in
	// between and the read must be repeated.
	ended [flightShards]atomic.Uint64
}

const flightShards = 256

type flightKey struct{ tenant, operation, key string }

func newFlights() *flights {
	return &flights{m: map[flightKey]chan struct{}{}, seed: maphash.MakeSeed()}
}

func (f *flights) shard(k Key) int {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteString(k.Tenant)
	h.WriteByte(0)
	h.WriteString(k.Operation)
	h.WriteByte(0)
	h.WriteString(k.Value)
	return int(h.Sum64() % flightShards)
}

// epoch is the count of ended flights of k's shard.
func (f *flights) epoch(k Key) uint64 { return f.ended[f.shard(k)].Load() }

// tryLead makes the caller the only executor of k in this process, or
// returns the channel that closes when the current one ends.
func (f *flights) tryLead(k Key) (leave func(), busy <-chan struct{}) {
	fk := flightKey{k.Tenant, k.Operation, k.Value}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.m[fk]; ok {
		return nil, ch
	}
	ch := make(chan struct{})
	f.m[fk] = ch
	return func() {
		// Count first: a request that finds no flight afterwards must see
		// the count moved (see ended).
		f.ended[f.shard(k)].Add(1)
		f.mu.Lock()
		delete(f.m, fk)
		f.mu.Unlock()
		close(ch)
	}, nil
}

// lead waits until the caller leads k, up to wait; busy is what tryLead
// returned. waited reports that another flight of k ended meanwhile. A
// timeout is ErrInFlight.
func (f *flights) lead(ctx context.Context, k Key, wait time.Duration, busy <-chan struct{}) (leave func(), waited bool, err error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-busy:
			waited = true
		case <-timer.C:
			return nil, waited, withRetryAfter(ErrInFlight, time.Second)
		case <-ctx.Done():
			return nil, waited, ctx.Err()
		}
		if leave, busy = f.tryLead(k); leave != nil {
			return leave, waited, nil
		}
	}
}
