package idemseal_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemseal"
)

func newKey(t testing.TB, id string) idemseal.Key {
	t.Helper()
	k := idemseal.Key{ID: id, Secret: make([]byte, idemseal.KeySize)}
	if _, err := rand.Read(k.Secret); err != nil {
		t.Fatal(err)
	}
	return k
}

func ring(t testing.TB, current idemseal.Key, retired ...idemseal.Key) *idemseal.Ring {
	t.Helper()
	r, err := idemseal.NewRing(current, retired...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := idemseal.New(ring(t, newKey(t, "k1")))
	aad := []byte("tenant-a/createPayment/key-1")
	for _, plain := range [][]byte{nil, {}, []byte(`{"id":"pay_1","amount":1999}`), bytes.Repeat([]byte{0xff}, 1<<16)} {
		sealed, err := s.Seal(ctx, plain, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !idemseal.IsSealed(sealed) {
			t.Fatalf("Seal's output %x lacks the sealed prefix", sealed[:8])
		}
		if id, ok := idemseal.KeyID(sealed); !ok || id != "k1" {
			t.Fatalf("KeyID = %q, %v; want k1", id, ok)
		}
		if len(plain) > 8 && bytes.Contains(sealed, plain[:8]) {
			t.Fatal("the sealed value contains the plaintext")
		}
		got, err := s.Open(ctx, sealed, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, want %q", got, plain)
		}
	}
	// Random nonces: sealing the same value twice gives different bytes.
	a, _ := s.Seal(ctx, []byte("x"), aad)
	b, _ := s.Seal(ctx, []byte("x"), aad)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	k1 := newKey(t, "k1")
	s := idemseal.New(ring(t, k1))
	aad := []byte("tenant-a/createPayment/key-1")
	sealed, err := s.Seal(ctx, []byte(`{"amount":1999}`), aad)
	if err != nil {
		t.Fatal(err)
	}

	// Moved under another record: other additional data.
	if _, err := s.Open(ctx, sealed, []byte("tenant-a/createPayment/key-2")); !errors.Is(err, idemseal.ErrOpen) {
		t.Fatalf("Open with another record's aad: err = %v, want ErrOpen", err)
	}
	// Any flipped byte after the header.
	for i := 4 + 1 + 2; i < len(sealed); i++ {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := s.Open(ctx, bad, aad); !errors.Is(err, idemseal.ErrOpen) {
			t.Fatalf("byte %d flipped: err = %v, want ErrOpen", i, err)
		}
	}
	// The header renamed to another key the ring holds (same secret, so
	// only the authenticated key id can catch it).
	twin := idemseal.New(ring(t, k1, idemseal.Key{ID: "k9", Secret: k1.Secret}))
	renamed := bytes.Replace(bytes.Clone(sealed), []byte("k1"), []byte("k9"), 1)
	if _, err := twin.Open(ctx, renamed, aad); !errors.Is(err, idemseal.ErrOpen) {
		t.Fatalf("header renamed to k9: err = %v, want ErrOpen", err)
	}
	// The same id with another secret.
	other := idemseal.New(ring(t, newKey(t, "k1")))
	if _, err := other.Open(ctx, sealed, aad); !errors.Is(err, idemseal.ErrOpen) {
		t.Fatalf("another secret under k1: err = %v, want ErrOpen", err)
	}
	// A key the ring does not hold.
	stranger := idemseal.New(ring(t, newKey(t, "k2")))
	if _, err := stranger.Open(ctx, sealed, aad); !errors.Is(err, idemseal.ErrUnknownKey) {
		t.Fatalf("unknown key: err = %v, want ErrUnknownKey", err)
	}
	// Plaintext and truncated values.
	if _, err := s.Open(ctx, []byte(`{"amount":1999}`), aad); !errors.Is(err, idemseal.ErrNotSealed) {
		t.Fatalf("plaintext: err = %v, want ErrNotSealed", err)
	}
	for _, n := range []int{4, 5, 7, len(sealed) - 1} {
		if _, err := s.Open(ctx, sealed[:n], aad); err == nil {
			t.Fatalf("truncated to %d bytes: opened", n)
		}
	}
}

func TestRotation(t *testing.T) {
	ctx := context.Background()
	k1, k2 := newKey(t, "2026-01"), newKey(t, "2026-03")
	aad := []byte("record")
	old, err := idemseal.New(ring(t, k1)).Seal(ctx, []byte("sealed in January"), aad)
	if err != nil {
		t.Fatal(err)
	}
	// k2 current, k1 retired: old values open, new ones are sealed with k2.
	s := idemseal.New(ring(t, k2, k1))
	got, err := s.Open(ctx, old, aad)
	if err != nil || string(got) != "sealed in January" {
		t.Fatalf("old value under the retired key: %q, %v", got, err)
	}
	fresh, err := s.Seal(ctx, []byte("sealed in March"), aad)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := idemseal.KeyID(fresh); id != "2026-03" {
		t.Fatalf("new value sealed with %q, want the current key 2026-03", id)
	}
	if cur, _ := s.Current(ctx); cur != "2026-03" {
		t.Fatalf("Current = %q", cur)
	}
	// k1 dropped: its values no longer open, and say which key is missing.
	_, err = idemseal.New(ring(t, k2)).Open(ctx, old, aad)
	if !errors.Is(err, idemseal.ErrUnknownKey) || !strings.Contains(err.Error(), "2026-01") {
		t.Fatalf("retired key dropped: err = %v, want ErrUnknownKey naming 2026-01", err)
	}
}

func TestParseRing(t *testing.T) {
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	enc := func(k idemseal.Key) string { return k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret) }

	r, err := idemseal.ParseRing("$IDEM_SEAL_KEYS", enc(k2)+","+enc(k1))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.IDs(); len(got) != 2 || got[0] != "k2" || got[1] != "k1" {
		t.Fatalf("IDs = %v, want [k2 k1]", got)
	}
	if k, _ := r.Current(context.Background()); k.ID != "k2" || !bytes.Equal(k.Secret, k2.Secret) {
		t.Fatalf("current = %q", k.ID)
	}

	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("# current first\n"+enc(k1)+"\n\n"+enc(k2)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = idemseal.RingFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.IDs(); len(got) != 2 || got[0] != "k1" {
		t.Fatalf("file: IDs = %v, want k1 first", got)
	}

	t.Setenv("IDEMSEAL_TEST_KEYS", "")
	if _, ok, err := idemseal.RingFromEnv("IDEMSEAL_TEST_KEYS"); ok || err != nil {
		t.Fatalf("empty variable: ok %v, err %v; want not configured", ok, err)
	}

	short := "k3:" + base64.StdEncoding.EncodeToString(make([]byte, 16))
	for in, want := range map[string]string{
		enc(k1) + "," + enc(k1):         `key id "k1" appears twice`,
		"no-colon":                      "is not ID:BASE64",
		"k1:not*base64":                 `key "k1": secret is not standard base64`,
		short:                           `key "k3": secret is 16 bytes, want 32`,
		"bad id:" + enc(k1)[3:]:         "is not ID:BASE64", // the space splits it
		"bad/id:" + enc(k1)[3:]:         `character '/' at 3`,
		"# only a comment\n":            "holds no keys",
		enc(k1) + "\n" + "k2:AAAA====x": "line 2",
	} {
		_, err := idemseal.ParseRing("$KEYS", in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRing(%.20q…): err = %v, want it to mention %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), base64.StdEncoding.EncodeToString(k1.Secret)) {
			t.Errorf("ParseRing(%.20q…): the error shows the secret", in)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	ctx := context.Background()
	s := idemseal.New(ring(b, newKey(b, "k1")))
	body := bytes.Repeat([]byte(`{"id":"pay_0123456789","amount":1999,"currency":"EUR"}`), 8) // ~440 bytes
	aad := []byte("tenant/createPayment/0b7e6a44-8f1c-4a43-9a5e-2b8f3e1d9c77")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Seal(ctx, body, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	s := idemseal.New(ring(b, newKey(b, "k1")))
	body := bytes.Repeat([]byte(`{"id":"pay_0123456789","amount":1999,"currency":"EUR"}`), 8)
	aad := []byte("tenant/createPayment/0b7e6a44-8f1c-4a43-9a5e-2b8f3e1d9c77")
	sealed, err := s.Seal(ctx, body, aad)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Open(ctx, sealed, aad); err != nil {
			b.Fatal(err)
		}
	}
}
