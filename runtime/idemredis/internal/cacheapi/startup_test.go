package cacheapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/idemredis/internal/cacheapi"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

// TestTypedNilRefused: a nil pointer in an interface-typed argument or
// Config field (`var cache *idemredis.Cache` passed on unset) is refused
// by idem.New with a message that names the field and says to leave it
// nil. Accepted, every request of the generated server would panic in
// the nil value's methods: the client sees its connection dropped.
//
// Fails when New does not call checkNotTypedNil: New accepts each, and
// the test shows what a request over HTTP then gets.
func TestTypedNilRefused(t *testing.T) {
	t.Parallel()
	db := newDB(t, false)
	var (
		cache  *idemredis.Cache
		sealer *idemseal.Sealer
		obs    *watch
		pool   *pgxpool.Pool
	)
	cases := []struct {
		name string
		db   idem.DB
		cfg  idem.Config
		want string
	}{
		{"cache", db, idem.Config{Cache: cache}, "idem: Config.Cache is a nil *idemredis.Cache: leave the field nil for no cache"},
		{"sealer", db, idem.Config{Sealer: sealer}, "idem: Config.Sealer is a nil *idemseal.Sealer: leave the field nil"},
		{"observer", db, idem.Config{Observers: []idem.Observer{&watch{}, obs}}, "idem: Config.Observers[1] is a nil *cacheapi_test.watch: leave it out of the list"},
		{"nil observer", db, idem.Config{Observers: []idem.Observer{nil}}, "idem: Config.Observers[0] is nil: leave it out of the list"},
		{"db", pool, idem.Config{}, "idem: the DB given to New is a nil *pgxpool.Pool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Operations = cacheapi.IdempotentOperations
			eng, err := idem.New(c.db, c.cfg)
			if err != nil {
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("New: %v\nwant it to say %q", err, c.want)
				}
				return
			}
			status, body, rerr := postOnce(t, eng)
			t.Fatalf("New accepted it; a POST then got status %d %q, error %v", status, body, rerr)
		})
	}
}

// TestShardChoosingTypedNil: a Shard function that returns a nil pointer
// for a tenant (a pool missing from a map of *pgxpool.Pool) is answered
// with a 500, not a panic that drops the connection.
//
// Fails when engineFor checks only for an untyped nil DB.
func TestShardChoosingTypedNil(t *testing.T) {
	t.Parallel()
	pools := map[string]*pgxpool.Pool{}
	eng, err := idem.New(nil, idem.Config{
		Operations: cacheapi.IdempotentOperations,
		Shard:      func(_ context.Context, tenant string) (idem.DB, error) { return pools[tenant], nil },
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	status, body, err := postOnce(t, eng)
	if err != nil || status != 500 {
		t.Fatalf("got status %d %q, error %v; want a 500", status, body, err)
	}
}

// postOnce serves one createPayment request through the generated server
// over eng.
func postOnce(t *testing.T, eng *idem.Engine) (int, string, error) {
	t.Helper()
	srv := httptest.NewServer(cacheapi.NewHandler(&service{}, eng))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/payments", bytes.NewReader([]byte(`{"amount":1}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
