package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestRecordsRegionConflicts: conflicts lists what region a's database
// recorded; drain-compensations runs -exec once per QUEUED compensation,
// the oldest first, marks DONE those whose command exited 0 and stops at
// the first that failed, leaving it QUEUED; prune-conflicts deletes the
// settled ones and never a queued one.
func TestRecordsRegionConflicts(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{Database: true})
	t.Setenv("DATABASE_URL", db.URL)
	t.Setenv("DATABASE_URLS", "")
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema.RegionSchema("a") + ",public"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := schema.SetupRegion(ctx, conn, idem.Region{Name: "a", Peers: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ key, comp string }{{"k1", "QUEUED"}, {"k2", "QUEUED"}, {"k3", "NONE"}} {
		if _, err := db.Exec(ctx, `INSERT INTO idem_a.idem_region_conflicts (id, peer, tenant, operation, idempotency_key,
			state, peer_state, winner, compensation, detected_at)
			VALUES (gen_random_uuid(), 'b', 'acme', 'createPayment', $1, 'COMPLETED', 'COMPLETED', 'b', $2, now() - make_interval(mins => 10 - $3))`,
			c.key, c.comp, i); err != nil {
			t.Fatal(err)
		}
	}
	state := func() map[string]string {
		t.Helper()
		code, out, errOut := runCmd(t, "records", "conflicts", "-region", "a", "-peers", "b", "-json")
		var cs []conflictJSON
		if code != 0 || json.Unmarshal([]byte(out), &cs) != nil {
			t.Fatalf("conflicts: exit %d\n%s%s", code, out, errOut)
		}
		m := map[string]string{}
		for _, c := range cs {
			m[c.Key] = c.Compensation
		}
		return m
	}
	if got := state(); len(got) != 3 || got["k1"] != "QUEUED" || got["k3"] != "NONE" {
		t.Fatalf("conflicts: %v", got)
	}

	// The command sees each conflict; it fails for k2.
	seen := filepath.Join(t.TempDir(), "seen")
	var data []byte
	code, out, errOut := runCmd(t, "records", "drain-compensations", "-region", "a", "-peers", "b",
		"-exec", `cat >> `+seen+`; echo >> `+seen+`; test "$IDEM_CONFLICT_KEY" != k2`)
	if code != 1 || !strings.Contains(out, "1 compensations done") || !strings.Contains(errOut, `compensate key "k2"`) {
		t.Fatalf("drain with a failing command: exit %d\n%s%s", code, out, errOut)
	}
	data, err = os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c conflictJSON
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Region != "a" || c.Peer != "b" || c.Tenant != "acme" {
			t.Fatalf("the command's input %q: %+v, %v", line, c, err)
		}
		keys = append(keys, c.Key)
	}
	if strings.Join(keys, ",") != "k1,k2" {
		t.Errorf("the command ran for %v, want k1 then k2", keys)
	}
	if got := state(); got["k1"] != "DONE" || got["k2"] != "QUEUED" {
		t.Fatalf("after the failed drain: %v, want k1 DONE and k2 still QUEUED", got)
	}
	if code, out, errOut := runCmd(t, "records", "drain-compensations", "-region", "a", "-peers", "b", "-exec", "true"); code != 0 || !strings.Contains(out, "1 compensations done") {
		t.Fatalf("drain: exit %d\n%s%s", code, out, errOut)
	}
	if got := state(); got["k2"] != "DONE" {
		t.Fatalf("after the drain: %v", got)
	}

	// Pruning: nothing is an hour old yet; then everything settled goes.
	if _, err := db.Exec(ctx, `INSERT INTO idem_a.idem_region_conflicts (id, peer, tenant, operation, idempotency_key,
		state, peer_state, winner, compensation) VALUES (gen_random_uuid(), 'b', '', 'createPayment', 'k4', 'COMPLETED', 'COMPLETED', 'b', 'QUEUED')`); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd(t, "records", "prune-conflicts", "-region", "a", "-peers", "b", "-older-than", "1h"); code != 0 || !strings.Contains(out, "0 settled") {
		t.Fatalf("prune: exit %d, %s", code, out)
	}
	if _, err := db.Exec(ctx, `UPDATE idem_a.idem_region_conflicts SET updated_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCmd(t, "records", "prune-conflicts", "-region", "a", "-peers", "b", "-older-than", "1h"); code != 0 || !strings.Contains(out, "3 settled") {
		t.Fatalf("prune: exit %d, %s", code, out)
	}
	if got := state(); len(got) != 1 || got["k4"] != "QUEUED" {
		t.Fatalf("after pruning: %v, want only the queued k4", got)
	}

	// Bad usage: exit 2, saying what is missing.
	for _, args := range [][]string{
		{"drain-compensations", "-region", "a", "-peers", "b"},
		{"conflicts", "-region", "a"},
		{"prune-conflicts", "-region", "a", "-peers", "b"},
	} {
		if code, _, errOut := runCmd(t, append([]string{"records"}, args...)...); code != 2 || !strings.Contains(errOut, "want -") {
			t.Errorf("records %v: exit %d, %q", args, code, errOut)
		}
	}
}
