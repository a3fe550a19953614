package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments/gateway"
)

// Both implementations must behave the same; every test runs on each.
func implementations(t *testing.T) map[string]func() (gateway.Gateway, func(gateway.Switches), func() gateway.Stats) {
	return map[string]func() (gateway.Gateway, func(gateway.Switches), func() gateway.Stats){
		"simulator": func() (gateway.Gateway, func(gateway.Switches), func() gateway.Stats) {
			s := gateway.New()
			return s, s.Set, s.Stats
		},
		"http": func() (gateway.Gateway, func(gateway.Switches), func() gateway.Stats) {
			s := gateway.New()
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			c := gateway.NewClient(srv.URL, nil)
			set := func(sw gateway.Switches) {
				if err := c.Set(context.Background(), sw); err != nil {
					t.Fatal(err)
				}
			}
			stats := func() gateway.Stats {
				_, st, err := c.Charges(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			return c, set, stats
		},
	}
}

func TestChargeIsIdempotentPerKey(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			gw, _, stats := mk()
			ctx := context.Background()
			first, err := gw.Charge(ctx, "k1", 500, "EUR")
			if err != nil {
				t.Fatal(err)
			}
			again, err := gw.Charge(ctx, "k1", 500, "EUR")
			if err != nil {
				t.Fatal(err)
			}
			if again.ID != first.ID {
				t.Fatalf("repeated charge: got %s, want the existing %s", again.ID, first.ID)
			}
			if _, err := gw.Charge(ctx, "k1", 501, "EUR"); !errors.Is(err, gateway.ErrKeyReused) {
				t.Fatalf("other amount under the same key: got %v, want ErrKeyReused", err)
			}
			if _, err := gw.Charge(ctx, "k2", 700, "EUR"); err != nil {
				t.Fatal(err)
			}
			ch, ok, err := gw.Lookup(ctx, "k1")
			if err != nil || !ok || ch.ID != first.ID {
				t.Fatalf("Lookup(k1) = %v, %v, %v; want %s", ch, ok, err, first.ID)
			}
			if _, ok, err := gw.Lookup(ctx, "nope"); err != nil || ok {
				t.Fatalf("Lookup(nope) = %v, %v; want not found", ok, err)
			}
			if st := stats(); st.Charges != 2 || st.Amount != 1200 || st.Calls != 4 {
				t.Fatalf("stats = %+v, want 2 charges, 1200, 4 calls", st)
			}
		})
	}
}

func TestFailureSwitches(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			gw, set, stats := mk()
			ctx := context.Background()

			set(gateway.Switches{FailBeforeCharge: 1})
			if _, err := gw.Charge(ctx, "k", 100, "EUR"); !errors.Is(err, gateway.ErrUnavailable) {
				t.Fatalf("fail before charge: got %v, want ErrUnavailable", err)
			}
			if _, ok, _ := gw.Lookup(ctx, "k"); ok {
				t.Fatal("fail before charge: a charge exists")
			}

			set(gateway.Switches{FailAfterCharge: 1})
			if _, err := gw.Charge(ctx, "k", 100, "EUR"); !errors.Is(err, gateway.ErrTimeout) {
				t.Fatalf("fail after charge: got %v, want ErrTimeout", err)
			}
			charged, ok, _ := gw.Lookup(ctx, "k")
			if !ok {
				t.Fatal("fail after charge: no charge recorded")
			}
			// The retry recovers the charge made by the call that timed out.
			got, err := gw.Charge(ctx, "k", 100, "EUR")
			if err != nil || got.ID != charged.ID {
				t.Fatalf("retry after timeout: got %v, %v; want %s", got.ID, err, charged.ID)
			}
			if st := stats(); st.Charges != 1 || st.Calls != 3 {
				t.Fatalf("stats = %+v, want 1 charge after 3 calls", st)
			}
		})
	}
}

func TestCallerGivingUpDuringLatency(t *testing.T) {
	s := gateway.New()
	s.Set(gateway.Switches{Latency: 400 * time.Millisecond})
	// Gives up long before the first half ends: nothing charged.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := s.Charge(ctx, "early", 100, "EUR"); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if _, ok, _ := s.Lookup(context.Background(), "early"); ok {
		t.Fatal("a caller that gave up before the charge was charged")
	}
	// Gives up during the second half: charged, but the caller sees a timeout.
	// Wait until the charge exists, then cancel.
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Charge(ctx2, "late", 100, "EUR")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok, _ := s.Lookup(context.Background(), "late"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("charge never happened")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel2()
	if err := <-done; !errors.Is(err, gateway.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
}

// TestHold: a call made while held charges, then waits for release (or
// its caller giving up, a timeout after the charge); a call that starts
// after release does not wait.
func TestHold(t *testing.T) {
	s := gateway.New()
	release := s.Hold()
	done := make(chan error, 1)
	go func() {
		_, err := s.Charge(context.Background(), "held", 100, "EUR")
		done <- err
	}()
	for {
		if _, ok, _ := s.Lookup(context.Background(), "held"); ok {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("a held call returned (%v) before release", err)
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := s.Charge(ctx, "gives up", 100, "EUR")
		gaveUp <- err
	}()
	for {
		if _, ok, _ := s.Lookup(context.Background(), "gives up"); ok {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, gateway.ErrTimeout) {
		t.Fatalf("a held caller that gave up: %v, want ErrTimeout", err)
	}
	release()
	release()
	if err := <-done; err != nil {
		t.Fatalf("the held call after release: %v", err)
	}
	if _, err := s.Charge(context.Background(), "after", 100, "EUR"); err != nil {
		t.Fatalf("a call after release: %v", err)
	}
}

func TestConcurrentDuplicatesChargeOnce(t *testing.T) {
	s := gateway.New()
	s.Set(gateway.Switches{FailBeforeRate: 0.2, FailAfterRate: 0.2})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.Charge(context.Background(), fmt.Sprintf("key-%d", i%10), 100, "EUR")
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.Charges > 10 || st.Calls != 200 {
		t.Fatalf("stats = %+v, want at most 10 charges after 200 calls", st)
	}
	for _, ch := range s.Charges() {
		if n := s.Calls(ch.Key); n != 20 {
			t.Fatalf("calls(%s) = %d, want 20", ch.Key, n)
		}
	}
}
