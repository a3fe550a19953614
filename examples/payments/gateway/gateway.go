// Package gateway simulates an external payment gateway: the outside world
// the payments service calls while it creates a payment, which no database
// transaction can roll back.
//
// Like real gateways (Stripe, Adyen), it has idempotency of its own: a
// charge is keyed by the payment's idempotency key, and a repeated Charge
// with the same key returns the existing charge instead of charging twice.
// Lookup answers "did you charge this key?", which is what the service's
// recovery hook asks after a crash.
//
// Switches produce every failure class a caller must survive: latency,
// failures before the charge (nothing happened) and after it (the card was
// charged but the caller sees a timeout).
//
// The Simulator keeps its charges in memory. Run it in a process of its own
// (Handler serves it over HTTP, Client calls it) when the service under test
// may be killed: the gateway's memory of charges must outlive the service,
// as a real gateway's does.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"sync"
	"time"
)

// Errors a Charge may return. ErrTimeout is the ambiguous one: the charge
// may or may not have happened, and only Lookup (or a repeated Charge with
// the same key) tells.
var (
	ErrUnavailable = errors.New("gateway unavailable (nothing was charged)")
	ErrTimeout     = errors.New("gateway timeout (the charge may have happened)")
	ErrKeyReused   = errors.New("gateway idempotency key reused with another amount or currency")
	ErrInvalid     = errors.New("gateway rejected the request as invalid")
)

// Charge is one charge at the gateway.
type Charge struct {
	ID       string    `json:"id"`
	Key      string    `json:"key"`
	Amount   int64     `json:"amount"`
	Currency string    `json:"currency"`
	Created  time.Time `json:"created"`
}

// Gateway is what the payments service needs from a gateway; both the
// in-process Simulator and the HTTP Client implement it.
type Gateway interface {
	// Charge charges amount under key, or returns the charge already made
	// under key.
	Charge(ctx context.Context, key string, amount int64, currency string) (Charge, error)
	// Lookup returns the charge made under key, if any.
	Lookup(ctx context.Context, key string) (Charge, bool, error)
}

// Switches inject latency and failures into Charge calls.
type Switches struct {
	// Latency is spent half before the charge and half after it. A caller
	// that gives up during the first half charged nothing; during the
	// second half it was charged but sees ErrTimeout.
	Latency time.Duration `json:"latency"`
	// HoldAfterCharge keeps each call this long after its charge (on top of
	// Latency's second half), or until its caller goes away: a charge made
	// whose answer is still on its way, for a test to act in between.
	HoldAfterCharge time.Duration `json:"holdAfterCharge"`
	// FailBeforeCharge fails the next N calls with ErrUnavailable.
	FailBeforeCharge int `json:"failBeforeCharge"`
	// FailAfterCharge makes the next N calls charge, then return ErrTimeout.
	FailAfterCharge int `json:"failAfterCharge"`
	// FailBeforeRate and FailAfterRate fail that fraction (0..1) of the
	// remaining calls, at random, the same two ways.
	FailBeforeRate float64 `json:"failBeforeRate"`
	FailAfterRate  float64 `json:"failAfterRate"`
}

// Stats counts what the gateway saw.
type Stats struct {
	Calls   int   `json:"calls"`   // Charge calls, failed ones included
	Charges int   `json:"charges"` // distinct charges (one per key)
	Amount  int64 `json:"amount"`  // sum of the charges' amounts
	// RawCharges counts the calls that reached the charging step: the
	// charges a gateway without idempotency of its own would have made.
	RawCharges int `json:"rawCharges"`
	// Overlaps counts the Charge calls that began while another call with
	// the same key was still in flight.
	Overlaps int `json:"overlaps"`
}

// KeyAudit is what the gateway saw of one key. It tells what the caller did
// apart from the gateway's own deduplication, which hides a caller that
// charges twice.
type KeyAudit struct {
	Calls int // Charge calls
	// Raw counts the calls that reached the charging step: without the
	// gateway's idempotency, each would have been a charge.
	Raw int
	// Ambiguous counts the raw calls whose caller was not told the charge
	// happened (ErrTimeout, injected or because the caller gave up): the
	// calls that explain a caller charging again.
	Ambiguous int
	// MaxInFlight is the most Charge calls with the key in flight at once.
	MaxInFlight int
}

// Simulator is an in-memory gateway. It is safe for concurrent use.
type Simulator struct {
	mu       sync.Mutex
	sw       Switches
	charges  map[string]Charge
	calls    map[string]int
	total    int
	audit    map[string]*KeyAudit
	inFlight map[string]int
	overlaps int
	hold     chan struct{} // see Hold; nil: no hold
}

var _ Gateway = (*Simulator)(nil)

// New returns a simulator with no charges and no failures switched on.
func New() *Simulator {
	return &Simulator{charges: map[string]Charge{}, calls: map[string]int{},
		audit: map[string]*KeyAudit{}, inFlight: map[string]int{}}
}

// Hold makes every Charge call that starts from now on wait after its
// charge, until release is called or its caller goes away: a charge made
// whose answer is held back for as long as a test needs, however slow the
// machine, where a Latency is a guess at how long the test takes to act.
// release may be called more than once.
func (s *Simulator) Hold() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.hold = gate
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.hold == gate {
				s.hold = nil
			}
			s.mu.Unlock()
			close(gate)
		})
	}
}

// Set replaces the switches.
func (s *Simulator) Set(sw Switches) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sw = sw
}

// Switches returns the current switches (counters as they stand now).
func (s *Simulator) Switches() Switches {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sw
}

type failure int

const (
	failNone failure = iota
	failBefore
	failAfter
)

// Charge implements Gateway.
func (s *Simulator) Charge(ctx context.Context, key string, amount int64, currency string) (Charge, error) {
	if key == "" || amount <= 0 || currency == "" {
		return Charge{}, fmt.Errorf("%w: key, a positive amount and a currency are required", ErrInvalid)
	}
	s.mu.Lock()
	s.calls[key]++
	s.total++
	a := s.audit[key]
	if a == nil {
		a = &KeyAudit{}
		s.audit[key] = a
	}
	a.Calls++
	if s.inFlight[key] > 0 {
		s.overlaps++
	}
	s.inFlight[key]++
	a.MaxInFlight = max(a.MaxInFlight, s.inFlight[key])
	defer func() {
		s.mu.Lock()
		s.inFlight[key]--
		s.mu.Unlock()
	}()
	fail := failNone
	switch {
	case s.sw.FailBeforeCharge > 0:
		s.sw.FailBeforeCharge--
		fail = failBefore
	case s.sw.FailAfterCharge > 0:
		s.sw.FailAfterCharge--
		fail = failAfter
	default:
		if r := mrand.Float64(); r < s.sw.FailBeforeRate {
			fail = failBefore
		} else if r < s.sw.FailBeforeRate+s.sw.FailAfterRate {
			fail = failAfter
		}
	}
	half, hold, gate := s.sw.Latency/2, s.sw.HoldAfterCharge, s.hold
	s.mu.Unlock()

	if err := sleep(ctx, half); err != nil {
		return Charge{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if fail == failBefore {
		return Charge{}, ErrUnavailable
	}

	s.mu.Lock()
	ch, ok := s.charges[key]
	if ok && (ch.Amount != amount || ch.Currency != currency) {
		s.mu.Unlock()
		return Charge{}, fmt.Errorf("%w: key %q charged %d %s, now asked for %d %s",
			ErrKeyReused, key, ch.Amount, ch.Currency, amount, currency)
	}
	if !ok {
		ch = Charge{ID: newID("ch_"), Key: key, Amount: amount, Currency: currency, Created: time.Now().UTC()}
		s.charges[key] = ch
	}
	a.Raw++
	s.mu.Unlock()

	err := sleep(ctx, half+hold)
	if err == nil && gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrTimeout, err)
	} else if fail == failAfter {
		err = ErrTimeout
	}
	if err != nil {
		s.mu.Lock()
		a.Ambiguous++
		s.mu.Unlock()
		return Charge{}, err
	}
	return ch, nil
}

// Lookup implements Gateway.
func (s *Simulator) Lookup(ctx context.Context, key string) (Charge, bool, error) {
	if err := ctx.Err(); err != nil {
		return Charge{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.charges[key]
	return ch, ok, nil
}

// Charges returns every charge, oldest first.
func (s *Simulator) Charges() []Charge {
	s.mu.Lock()
	out := make([]Charge, 0, len(s.charges))
	for _, ch := range s.charges {
		out = append(out, ch)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Calls returns how many Charge calls were made with key.
func (s *Simulator) Calls(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// Audit returns what the gateway saw of each key it was asked to charge.
func (s *Simulator) Audit() map[string]KeyAudit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]KeyAudit, len(s.audit))
	for k, a := range s.audit {
		out[k] = *a
	}
	return out
}

// Stats returns the totals.
func (s *Simulator) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Calls: s.total, Charges: len(s.charges), Overlaps: s.overlaps}
	for _, ch := range s.charges {
		st.Amount += ch.Amount
	}
	for _, a := range s.audit {
		st.RawCharges += a.Raw
	}
	return st
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}
