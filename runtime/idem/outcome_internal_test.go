package idem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// A record's response headers read back as json.Marshal of the same map
// would give them: names sorted, values in order, special and invalid
// characters escaped or replaced alike.
func TestHeadersJSON(t *testing.T) {
	for _, hdr := range []map[string][]string{
		{},
		{"Content-Type": {"application/json"}},
		{"Location": {"/payments/1"}, "Content-Type": {"application/json"}, "Etag": {`"abc"`}},
		{"X-Many": {"a", "b", "c"}, "A": {""}},
		{"X-Odd": {"<tag> & \"quote\" \\ back\x01\x1f\t\n", "caf\xe9 \xff", "日本"}},
	} {
		var stored []storedHeader
		for n, v := range hdr {
			stored = append(stored, storedHeader{n, v})
		}
		got := appendHeadersJSON(nil, stored)
		want, err := json.Marshal(hdr)
		if err != nil {
			t.Fatal(err)
		}
		var g, w map[string][]string
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("headers %q read back as %q, json.Marshal's as %q", got, g, w)
		}
	}
	// Two names alike once canonical are one.
	got := appendHeadersJSON(nil, []storedHeader{{http.CanonicalHeaderKey("etag"), []string{"1"}}, {"Etag", []string{"1"}}})
	if string(got) != `{"Etag":["1"]}` {
		t.Errorf("two Etag headers: %s", got)
	}
}

type ctxKey struct{}

// The bookkeeping context outlives its parent's cancellation, carries its
// values, has a deadline once asked, and ends when cancelled, whether or
// not anything asked for it before.
func TestBookkeepingContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	bk, cancel := bookkeepingContext(parent)
	cancelParent()
	if bk.Err() != nil {
		t.Fatalf("ended with its parent: %v", bk.Err())
	}
	if d, ok := bk.Deadline(); !ok || time.Until(d) > bookkeepingTimeout {
		t.Fatalf("deadline %v, %t", d, ok)
	}
	if bk.Value(ctxKey{}) != "v" {
		t.Fatal("lost its parent's values")
	}
	child, cancelChild := context.WithCancel(bk)
	defer cancelChild()
	ran := make(chan struct{})
	context.AfterFunc(bk, func() { close(ran) })
	cancel()
	<-bk.Done()
	if !errors.Is(bk.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v", bk.Err())
	}
	<-child.Done() // a derived context ends with it
	<-ran          // and so does what waits on it
	unasked, cancel := bookkeepingContext(context.Background())
	cancel()
	if !errors.Is(unasked.Err(), context.Canceled) {
		t.Fatalf("cancelled before use: %v", unasked.Err())
	}
}
