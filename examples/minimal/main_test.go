package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestBookings drives the service over HTTP against a real PostgreSQL
// (DATABASE_URL): a booking, its replay, a reused key and a read.
func TestBookings(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{Migrations: migrations, MigrationsTable: "rooms_schema_migrations"})
	metrics := idemprom.New(idemprom.Options{})
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics)
	h, err := newHandler(db.Pool, metrics)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	const key = "0190f3c1-7a2b-7cde-8f01-23456789abcd"
	const body = `{"room": "Ada", "start": "2030-01-02T09:00:00Z", "partySize": 4}`
	first, firstBody := send(t, "POST", srv.URL+"/bookings", key, body)
	if first.StatusCode != 201 {
		t.Fatalf("first POST: %d %s", first.StatusCode, firstBody)
	}
	// A retry (the client timed out, say) gets the same booking, not a second one.
	again, againBody := send(t, "POST", srv.URL+"/bookings", key, body)
	if again.StatusCode != 201 || again.Header.Get("Idempotent-Replayed") != "true" || againBody != firstBody {
		t.Fatalf("retry: %d replayed=%q %s, want the first response replayed: %s",
			again.StatusCode, again.Header.Get("Idempotent-Replayed"), againBody, firstBody)
	}
	// The same key for another booking is refused.
	other, otherBody := send(t, "POST", srv.URL+"/bookings", key, strings.Replace(body, "4", "5", 1))
	if other.StatusCode != 409 {
		t.Fatalf("same key, another body: %d %s, want 409", other.StatusCode, otherBody)
	}
	// A request that breaks the schema is a 400 naming the member and the
	// rule; it leaves no record, so its key stays free for the corrected one.
	invalid, invalidBody := send(t, "POST", srv.URL+"/bookings", "0190f3c1-7a2b-7cde-8f01-000000000002", strings.Replace(body, "4", "null", 1))
	if invalid.StatusCode != 400 || !strings.Contains(invalidBody, `"pointer":"#/partySize"`) || !strings.Contains(invalidBody, "cannot be null") {
		t.Fatalf("partySize null: %d %s, want 400 naming #/partySize", invalid.StatusCode, invalidBody)
	}
	var n int
	if err := db.QueryRow(t.Context(), "SELECT count(*) FROM bookings").Scan(&n); err != nil || n != 1 {
		t.Fatalf("bookings: %d (%v), want 1", n, err)
	}

	var booking struct{ ID string }
	if err := json.Unmarshal([]byte(firstBody), &booking); err != nil {
		t.Fatal(err)
	}
	got, gotBody := send(t, "GET", srv.URL+"/bookings/"+booking.ID, "", "")
	if got.StatusCode != 200 || gotBody != firstBody {
		t.Fatalf("GET: %d %s, want 200 %s", got.StatusCode, gotBody, firstBody)
	}

	// A method the path does not declare is a 405 problem, as the other answers.
	if res, body := send(t, "DELETE", srv.URL+"/bookings/"+booking.ID, "", ""); res.StatusCode != 405 ||
		res.Header.Get("Allow") != "GET, HEAD" || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("DELETE: %d Allow %q %s", res.StatusCode, res.Header.Get("Allow"), body)
	}

	// Every request is counted by operation and outcome, the GET included.
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); f.GetName() == "idem_requests_total" { // labels sorted: operation, outcome
				counts[l[0].GetValue()+" "+l[1].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{"createBooking executed": 1, "createBooking replayed": 1, "createBooking conflict": 1, "createBooking rejected": 1, "getBooking not_idempotent": 1}
	if !maps.Equal(counts, want) {
		t.Errorf("idem_requests_total: %v, want %v", counts, want)
	}
}

func send(t *testing.T, method, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, strings.TrimSpace(string(b))
}

// TestServerBounds: the server run sets every bound a server facing
// clients needs, and a client that announces a 100 MiB body and sends
// nothing is answered 413 at once (the body is over the engine's limit),
// over real HTTP, not left waiting for a body that never comes.
func TestServerBounds(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{Migrations: migrations, MigrationsTable: "rooms_schema_migrations"})
	h, err := newHandler(db.Pool, idemprom.New(idemprom.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg := newServer("", h)
	for name, set := range map[string]bool{
		"ReadHeaderTimeout": cfg.ReadHeaderTimeout > 0, "ReadTimeout": cfg.ReadTimeout > 0, "WriteTimeout": cfg.WriteTimeout > 0,
		"IdleTimeout": cfg.IdleTimeout > 0, "MaxHeaderBytes": cfg.MaxHeaderBytes > 0,
	} {
		if !set {
			t.Errorf("newServer leaves %s unset", name)
		}
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config = cfg
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // fails the test rather than hang it
	fmt.Fprintf(conn, "POST /bookings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Idempotency-Key: 0190f3c1-7a2b-7cde-8f01-000000000003\r\nContent-Length: %d\r\n\r\n", 100<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a request announcing 100 MiB and sending nothing: no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a request announcing 100 MiB and sending nothing: %d, want 413", resp.StatusCode)
	}
}
