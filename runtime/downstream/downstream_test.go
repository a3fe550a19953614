package downstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idem"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func derive(t *testing.T, secret []byte, rec downstream.Record, site string) string {
	t.Helper()
	k, err := downstream.KeyAs(downstream.NewContext(context.Background(), secret, rec), site, downstream.UUID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestPinned pins the derivation (the first value checked against
// Python's hmac module over the encoding the package doc describes): a service that derives another key for
// the same request after an upgrade makes its downstreams run a retried
// call again. Changing it is a breaking change of every deployment.
func TestPinned(t *testing.T) {
	rec := downstream.Record{Tenant: "acme", Operation: "cancelBooking", Key: "0198a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}
	for _, c := range []struct {
		secret []byte
		f      downstream.Format
		want   string
	}{
		{secret, downstream.UUID, "40af3eaa-b308-8278-bd15-449e9371a34c"},
		{nil, downstream.UUID, "a5141285-4f03-8b5d-8b55-cd6b8893042a"},
		{secret, downstream.UUIDv4, "40af3eaa-b308-4278-bd15-449e9371a34c"},
		{secret, downstream.UUIDv7, "40af3eaa-b308-7278-bd15-449e9371a34c"},
		{secret, downstream.Opaque("ik_"), "ik_QK8-qrMI4ng9FUSek3GjTM1C8y5CHXrUH61sZ1IfcKA"},
	} {
		got, err := downstream.Derive(c.secret, rec, "refund", c.f)
		if err != nil || got != c.want {
			t.Errorf("Derive(secret %t) = %q, %v; want %q", c.secret != nil, got, err, c.want)
		}
	}
}

func TestDistinct(t *testing.T) {
	base := downstream.Record{Tenant: "acme", Operation: "cancelBooking", Key: "k-1"}
	want := derive(t, secret, base, "refund")
	if again := derive(t, secret, base, "refund"); again != want {
		t.Fatalf("the same request and site derived %s, then %s", want, again)
	}
	others := map[string]string{
		"another call site":        derive(t, secret, base, "notify"),
		"another tenant, same key": derive(t, secret, downstream.Record{Tenant: "globex", Operation: base.Operation, Key: base.Key}, "refund"),
		"another operation":        derive(t, secret, downstream.Record{Tenant: base.Tenant, Operation: "createBooking", Key: base.Key}, "refund"),
		"another key":              derive(t, secret, downstream.Record{Tenant: base.Tenant, Operation: base.Operation, Key: "k-2"}, "refund"),
		"another secret":           derive(t, []byte("another secret of 32 bytes......"), base, "refund"),
		"no secret":                derive(t, nil, base, "refund"),
		// The parts are length-prefixed: moving a boundary changes the key.
		"tenant/operation boundary": derive(t, secret, downstream.Record{Tenant: "acmec", Operation: "ancelBooking", Key: base.Key}, "refund"),
		"key/site boundary":         derive(t, secret, downstream.Record{Tenant: base.Tenant, Operation: base.Operation, Key: "k-1r"}, "efund"),
	}
	seen := map[string]string{want: "the request"}
	for what, k := range others {
		if prev, dup := seen[k]; dup {
			t.Errorf("%s derives %s, as %s does", what, k, prev)
		}
		seen[k] = what
	}
}

func TestOutsideARequest(t *testing.T) {
	for _, ctx := range []context.Context{context.Background(), idem.ContextWithKey(context.Background(), idem.Key{Value: "k"})} {
		k, err := downstream.Key(ctx, "refund")
		if !errors.Is(err, downstream.ErrNoRequest) || k != "" {
			t.Errorf("Key outside a request = %q, %v; want ErrNoRequest", k, err)
		}
	}
}

func TestBadInput(t *testing.T) {
	ctx := downstream.NewContext(context.Background(), secret, downstream.Record{Key: "k"})
	if _, err := downstream.Key(ctx, ""); err == nil || !strings.Contains(err.Error(), "empty call-site name") {
		t.Errorf("empty site: %v", err)
	}
	for _, prefix := range []string{"has space", strings.Repeat("p", 65), "é"} {
		if _, err := downstream.KeyAs(ctx, "refund", downstream.Opaque(prefix)); err == nil || !strings.Contains(err.Error(), `call site "refund": opaque prefix`) {
			t.Errorf("prefix %q: %v", prefix, err)
		}
	}
	if _, err := downstream.KeyAs(ctx, "refund", nil); err == nil {
		t.Error("nil Format: no error")
	}
}

// TestFormatsAccepted: each format's keys are accepted by an idemgen
// service of the matching keyFormat.
func TestFormatsAccepted(t *testing.T) {
	for _, c := range []struct {
		f      downstream.Format
		format idem.KeyFormat
	}{
		{downstream.UUID, idem.KeyFormatUUID},
		{downstream.UUIDv4, idem.KeyFormatUUIDv4},
		{downstream.UUIDv7, idem.KeyFormatUUIDv7},
		{downstream.Opaque(""), idem.KeyFormatOpaque},
		{downstream.Opaque("ik_"), idem.KeyFormatOpaque},
		{downstream.UUID, idem.KeyFormatOpaque},
	} {
		for i := range 64 {
			rec := downstream.Record{Tenant: "t", Operation: "op", Key: strings.Repeat("k", i+1)}
			k, err := downstream.Derive(secret, rec, "site", c.f)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := idem.ParseKey(k, c.format); err != nil || got != k {
				t.Fatalf("keyFormat %s refuses %q: %v", c.format, k, err)
			}
		}
	}
}

func Example() {
	// What the engine does before it runs a handler of a request
	// (tenant "acme", operation cancelBooking, key 0198a3c4-…).
	ctx := downstream.NewContext(context.Background(), []byte("the service's secret, 32+ bytes."),
		downstream.Record{Tenant: "acme", Operation: "cancelBooking", Key: "0198a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"})

	// In the handler: the key of the refund it asks the payment service
	// for, the same on every attempt of this request.
	key, err := downstream.Key(ctx, "refund")
	if err != nil {
		panic(err)
	}
	again, _ := downstream.Key(ctx, "refund")
	other, _ := downstream.Key(ctx, "notify")
	fmt.Println(key == again, key != other, len(key))
	// Output: true true 36
}
