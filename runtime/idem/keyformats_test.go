package idem_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// keyRow is one row of the table in docs/keys.md.
type keyRow struct {
	format   idem.KeyFormat
	profiles []idem.Profile
	sent     string
	accepted bool
	recorded string
}

var (
	rowRE     = regexp.MustCompile("^\\| `([a-z0-9]+)` \\| ([a-z, ]+) \\| (.+) \\| (refused|accepted as (.+)) \\|$")
	literalRE = regexp.MustCompile("^`(\".*\")`(?: × ([0-9]+))?$")
)

// keyRows reads the table of keys as sent from docs/keys.md, so that the
// page and the behaviour cannot drift apart.
func keyRows(t *testing.T) []keyRow {
	t.Helper()
	doc, err := os.ReadFile("../../docs/keys.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## Keys as sent")
	if !ok {
		t.Fatal("docs/keys.md has no section \"Keys as sent\"")
	}
	literal := func(cell string) string {
		m := literalRE.FindStringSubmatch(cell)
		if m == nil {
			t.Fatalf("docs/keys.md: %q is not a Go string literal (× n)", cell)
		}
		s, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatalf("docs/keys.md: %s: %v", m[1], err)
		}
		if m[2] != "" {
			n, _ := strconv.Atoi(m[2])
			s = strings.Repeat(s, n)
		}
		return s
	}
	var rows []keyRow
	for _, line := range strings.Split(table, "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		r := keyRow{format: idem.KeyFormat(m[1]), sent: literal(m[3]), accepted: m[4] != "refused"}
		if r.accepted {
			r.recorded = literal(m[5])
		}
		if m[2] == "all" {
			for _, p := range idem.PolicyEnums()["profile"] {
				r.profiles = append(r.profiles, idem.Profile(p))
			}
		} else {
			for _, p := range strings.Split(m[2], ", ") {
				r.profiles = append(r.profiles, idem.Profile(p))
			}
		}
		rows = append(rows, r)
	}
	if len(rows) < 30 {
		t.Fatalf("docs/keys.md: %d rows of keys as sent", len(rows))
	}
	return rows
}

// TestKeyFormatsTable sends every key of docs/keys.md over HTTP to an
// operation of its format and profile: an accepted key runs and is
// recorded as the table says, a refused one is a 400 that leaves no
// record.
func TestKeyFormatsTable(t *testing.T) {
	t.Parallel()
	rows := keyRows(t)
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	envs := map[string]*env{}
	envFor := func(f idem.KeyFormat, p idem.Profile) *env {
		tenant := string(f) + "/" + string(p)
		if e := envs[tenant]; e != nil {
			return e
		}
		pol := testPolicy(idem.ModeAtomic)
		pol.KeyFormat, pol.Profile = f, p
		e := newEnvOn(t, db, pol, idem.Config{Scope: func(*http.Request) (string, error) { return tenant, nil }})
		envs[tenant] = e
		return e
	}
	recorded := func(tenant, key string) bool {
		var n int
		err := db.QueryRow(context.Background(), "SELECT count(*) FROM idem_records WHERE tenant = $1 AND idempotency_key = $2", tenant, key).Scan(&n)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return n == 1
	}
	for _, r := range rows {
		for _, p := range r.profiles {
			e := envFor(r.format, p)
			tenant := string(r.format) + "/" + string(p)
			before := e.count("SELECT count(*) FROM idem_records WHERE tenant = $1", tenant)
			res := e.post(r.sent, payReq{Amount: 1})
			switch {
			case r.accepted && (res.Status != 201 || !recorded(tenant, r.recorded)):
				t.Errorf("%s, profile %s: %q: %d %s, want it accepted and recorded as %q", r.format, p, r.sent, res.Status, res.Body, r.recorded)
			case !r.accepted && res.Status != 400:
				t.Errorf("%s, profile %s: %q: %d %s, want it refused", r.format, p, r.sent, res.Status, res.Body)
			case !r.accepted && e.count("SELECT count(*) FROM idem_records WHERE tenant = $1", tenant) != before:
				t.Errorf("%s, profile %s: %q was refused but left a record", r.format, p, r.sent)
			}
		}
	}
}
