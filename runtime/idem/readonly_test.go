package idem_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestReadOnlyServerIsUnavailable: a server that takes no writes — a hot
// standby, a primary being demoted, default_transaction_read_only set —
// answers every write with SQLSTATE 25006. Whichever statement meets it
// (an atomic handler's own INSERT, the atomic outcome's INSERT, a lease
// claim, a keyless request's handler, a non-idempotent handler's write),
// in a pipelined or a plain session, the client gets 503
// DATABASE_UNAVAILABLE with Retry-After, never a 500, and nothing is left
// behind; a completed key still replays (reads work). Once the server
// takes writes again, each retry runs once and commits.
//
// The server is the test's own: the setting is server-wide.
func TestReadOnlyServerIsUnavailable(t *testing.T) {
	t.Parallel()
	server := pgtest.StartServers(t, 1)[0]
	db := pgtest.New(t, pgtest.Options{Server: server, Migrations: fstest.MapFS{
		"9000_rows.up.sql": {Data: []byte(`CREATE TABLE ro_rows (k text NOT NULL)`)},
	}})
	t.Cleanup(func() { setReadOnly(t, db, server, false) }) // before the schema is dropped

	atomicPol := idem.DefaultPolicy()
	atomicPol.Required = false // a request without a key runs in a plain transaction
	leasePol := idem.DefaultPolicy()
	leasePol.Mode = idem.ModeLease
	ops := map[string]*idem.Operation{
		"atomic": {ID: "roAtomic", Method: "POST", Pattern: "/atomic", Policy: atomicPol},
		"lease":  {ID: "roLease", Method: "POST", Pattern: "/lease", Policy: leasePol},
	}
	// handler writes a row for its key unless the query says nowrite: then
	// the outcome's own statement is the first write.
	handler := func(r *http.Request) idem.Handler {
		return func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
			k := r.Header.Get("Idempotency-Key")
			if r.URL.Query().Get("nowrite") == "" {
				if _, err := tx.Exec(ctx, "INSERT INTO ro_rows (k) VALUES ($1)", k); err != nil {
					return nil, fmt.Errorf("insert row: %w", err)
				}
			}
			return &idem.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"ok":true}`)}, nil
		}
	}
	servers := map[string]string{}
	for _, session := range []string{"pipelined", "plain"} {
		var edb idem.DB = db
		if session == "plain" {
			edb = plainDB{db}
		}
		eng, err := idem.New(edb, idem.Config{Operations: []*idem.Operation{ops["atomic"], ops["lease"]}})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		for _, op := range ops {
			mux.HandleFunc(op.Method+" "+op.Pattern, func(w http.ResponseWriter, r *http.Request) {
				eng.Serve(w, r, op, func([]byte) (idem.Prepared, error) { return idem.Prepared{Handler: handler(r)}, nil })
			})
		}
		mux.HandleFunc("POST /plain", func(w http.ResponseWriter, r *http.Request) {
			w, r, done := eng.Plain(w, r, "roPlain")
			defer done()
			if _, err := db.Exec(r.Context(), "INSERT INTO ro_rows (k) VALUES ('plain')"); err != nil {
				eng.WriteError(w, r, idem.ProfileDefault, fmt.Errorf("insert row: %w", err))
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		servers[session] = srv.URL
	}
	post := func(url, key string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}

	// A key completed before: its replay only reads.
	done := newKey()
	if st, _, body := post(servers["pipelined"]+"/atomic", done); st != 201 {
		t.Fatalf("before: %d %s", st, body)
	}

	setReadOnly(t, db, server, true)
	type attempt struct{ name, url, key string }
	var keyed []attempt
	for _, session := range []string{"pipelined", "plain"} {
		u := servers[session]
		keyed = append(keyed,
			attempt{session + " atomic, the handler's write", u + "/atomic", newKey()},
			attempt{session + " atomic, the outcome's write", u + "/atomic?nowrite=1", newKey()},
			attempt{session + " lease, the claim", u + "/lease", newKey()},
		)
	}
	all := append([]attempt{}, keyed...)
	for _, session := range []string{"pipelined", "plain"} {
		all = append(all,
			attempt{session + " atomic without a key, the handler's write", servers[session] + "/atomic", ""},
			attempt{session + " not idempotent, the handler's write", servers[session] + "/plain", ""},
		)
	}
	for _, a := range all {
		st, h, body := post(a.url, a.key)
		if st != 503 || !strings.Contains(body, idemproblem.ReasonDatabaseDown) || h.Get("Retry-After") == "" {
			t.Errorf("%s on a read-only server: %d Retry-After %q %s; want 503 %s with Retry-After",
				a.name, st, h.Get("Retry-After"), body, idemproblem.ReasonDatabaseDown)
		}
	}
	if st, h, body := post(servers["plain"]+"/atomic", done); st != 201 || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a completed key on a read-only server: %d %s; want its replay", st, body)
	}
	var records, rows int
	if err := db.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM idem_records), (SELECT count(*) FROM ro_rows)").Scan(&records, &rows); err != nil {
		t.Fatal(err)
	}
	if records != 1 || rows != 1 {
		t.Errorf("after the read-only answers: %d records and %d rows, want the completed key's 1 and 1", records, rows)
	}

	setReadOnly(t, db, server, false)
	for _, a := range keyed {
		if st, h, body := post(a.url, a.key); st != 201 || h.Get("Idempotent-Replayed") != "" {
			t.Errorf("%s, retried on a writable server: %d replayed=%q %s; want 201 executed", a.name, st, h.Get("Idempotent-Replayed"), body)
		}
		if st, h, _ := post(a.url, a.key); st != 201 || h.Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s, retried again: %d, want the replay", a.name, st)
		}
		var n int
		if err := db.QueryRow(context.Background(), "SELECT count(*) FROM ro_rows WHERE k = $1", a.key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[strings.Contains(a.url, "nowrite")]; n != want {
			t.Errorf("%s: %d rows for the key after its retries, want %d", a.name, n, want)
		}
	}
}

// setReadOnly turns default_transaction_read_only on or off for the whole
// server, waits until a new connection sees it and replaces db's pooled
// connections: an idle backend applies a reloaded setting only after its
// next command.
func setReadOnly(t *testing.T, db *pgtest.DB, server string, on bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	want := map[bool]string{true: "on", false: "off"}[on]
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET default_transaction_read_only = "+want); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = c.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&got)
		c.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("default_transaction_read_only is still %s a minute after the reload", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	db.Reset()
}
