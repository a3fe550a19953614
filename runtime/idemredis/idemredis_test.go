package idemredis_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

func newCache(t *testing.T, url string, opts idemredis.Options) *idemredis.Cache {
	t.Helper()
	c, err := idemredis.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// eventually retries f until it succeeds: the first calls fail while the
// connection is made in the background.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after 20s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCommands: Lookup places a marker only where there is nothing, and
// returns what is there otherwise; Set replaces a marker; Release removes
// only its own marker; every key carries the prefix and its TTL.
func TestCommands(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	prefix := "t" + uuid.NewString()[:8] + ":"
	c := newCache(t, srv.URL, idemredis.Options{Prefix: prefix, Timeout: time.Second})
	ctx := context.Background()
	eventually(t, "first Get", func() error { _, err := c.Get(ctx, "warm"); return err })

	v, marked, err := c.Lookup(ctx, "k", []byte("M1"), time.Minute)
	if err != nil || !marked || v != nil {
		t.Fatalf("Lookup of an absent key = %q, %v, %v; want the marker placed", v, marked, err)
	}
	v, marked, err = c.Lookup(ctx, "k", []byte("M2"), time.Minute)
	if err != nil || marked || string(v) != "M1" {
		t.Fatalf("Lookup of a marked key = %q, %v, %v; want the first marker, nothing placed", v, marked, err)
	}
	if got := srv.Do("GET", prefix+"k"); got != "M1" {
		t.Fatalf("the key is stored under its prefix: GET %sk = %q", prefix, got)
	}
	if ms, _ := strconv.Atoi(srv.Do("PTTL", prefix+"k")); ms <= 0 || ms > 60000 {
		t.Fatalf("the marker's TTL is %d ms, want (0, 60000]", ms)
	}
	// Another request's marker is not released.
	if err := c.Release(ctx, "k", []byte("M2")); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(ctx, "k"); string(v) != "M1" {
		t.Fatalf("Release with another marker removed %q", "M1")
	}
	value := append([]byte{0, 1, 2, 255}, bytes.Repeat([]byte("body"), 1000)...)
	if err := c.Set(ctx, "k", value, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	// A value set meanwhile is not released either.
	if err := c.Release(ctx, "k", []byte("M1")); err != nil {
		t.Fatal(err)
	}
	v, marked, err = c.Lookup(ctx, "k", []byte("M3"), time.Minute)
	if err != nil || marked || !bytes.Equal(v, value) {
		t.Fatalf("Lookup of a set key = %d bytes, %v, %v; want the value byte for byte", len(v), marked, err)
	}
	if ms, _ := strconv.Atoi(srv.Do("PTTL", prefix+"k")); ms <= 0 || ms > 2000 {
		t.Fatalf("the value's TTL is %d ms, want (0, 2000]", ms)
	}
	// The own marker is released.
	if _, marked, _ := c.Lookup(ctx, "own", []byte("M4"), time.Minute); !marked {
		t.Fatal("no marker placed")
	}
	if err := c.Release(ctx, "own", []byte("M4")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "own"); v != nil || err != nil {
		t.Fatalf("Get after Release = %q, %v; want nothing", v, err)
	}
}

// TestServerDown: a Cache made while Redis is down works once Redis is up;
// after Failures failed calls in a row, calls fail at once
// (ErrUnavailable) until the cool-down ends, and then reach Redis again.
func TestServerDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Kill()
	c := newCache(t, srv.URL, idemredis.Options{Timeout: 200 * time.Millisecond, Failures: 2, Cooldown: 300 * time.Millisecond})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := c.Get(ctx, "k"); err == nil || errors.Is(err, idemredis.ErrUnavailable) {
			t.Fatalf("call %d with Redis down = %v, want the failure itself", i+1, err)
		}
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, idemredis.ErrUnavailable) {
		t.Fatalf("after 2 failures = %v, want ErrUnavailable", err)
	}
	srv.Restart()
	eventually(t, "Get after the restart", func() error { _, err := c.Get(ctx, "k"); return err })
	if _, marked, err := c.Lookup(ctx, "k", []byte("M"), time.Minute); err != nil || !marked {
		t.Fatalf("Lookup after the restart = %v, %v", marked, err)
	}

	// Killed under a working client: calls fail (rueidis reconnects once
	// Redis is back), and the restarted Redis is empty.
	srv.Kill()
	if _, err := c.Get(ctx, "k"); err == nil {
		t.Fatal("Get with Redis killed succeeded")
	}
	srv.Restart()
	eventually(t, "Get after kill -9 and restart", func() error {
		v, err := c.Get(ctx, "k")
		if err == nil && v != nil {
			t.Fatalf("the restarted Redis still holds %q", v)
		}
		return err
	})
}

// TestServerPaused: a paused Redis (CLIENT PAUSE) makes calls time out
// with the call's bound instead of hanging; once it resumes, calls succeed.
func TestServerPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newCache(t, srv.URL, idemredis.Options{Timeout: 50 * time.Millisecond, Failures: 100})
	ctx := context.Background()
	eventually(t, "first Get", func() error { _, err := c.Get(ctx, "k"); return err })
	srv.Do("CLIENT", "PAUSE", "3000", "ALL")
	_, _, err := c.Lookup(ctx, "k", []byte("M"), time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lookup on a paused Redis = %v, want the call's deadline exceeded", err)
	}
	srv.Do("CLIENT", "UNPAUSE")
	eventually(t, "Lookup after UNPAUSE", func() error { _, _, err := c.Lookup(ctx, "k2", []byte("M"), time.Minute); return err })
}
