package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/pgtest"
	"github.com/jackc/pgx/v5"
)

// recordsDB is a schema holding records in every state the CLI treats
// differently, inserted as the engine would leave them.
func recordsDB(t *testing.T) *pgtest.DB {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{})
	t.Setenv("DATABASE_URL", db.URL)
	t.Setenv("IDEM_SEAL_KEYS", "")
	t.Setenv("IDEM_SEAL_KEYS_FILE", "")
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Exec(context.Background(), sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	fp := make([]byte, 32)
	ins := `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
		response_status, response_headers, response_body, attempts, fence, lease_expires_at, created_at, completed_at, expires_at)
		VALUES (idem_record_id($1, $2, $3), $1, $2, $3, $4, $5, 'v1', $6, $7, $8, $9, $10, now() + $11::interval, now() - $12::interval,
		CASE WHEN $13::boolean THEN now() END, now() + interval '1 day')`
	exec(ins, "", "createPayment", "done-1", "COMPLETED", fp, 201, `{"Content-Type":["application/json"]}`, []byte(`{"id":"pay_1"}`), 1, 1, nil, "1 hour", true)
	exec(ins, "", "createPayment", "stuck-1", "IN_PROGRESS", fp, nil, nil, nil, 2, 2, "-1 minute", "10 minutes", false)
	exec(ins, "", "createPayment", "live-1", "IN_PROGRESS", fp, nil, nil, nil, 1, 1, "1 hour", "1 second", false)
	exec(ins, "", "createPayment", "unknown-1", "UNKNOWN", fp, nil, nil, nil, 3, 3, nil, "20 minutes", false)
	exec(ins, "acme", "createPayment", "unknown-1", "UNKNOWN", fp, nil, nil, nil, 1, 1, nil, "30 minutes", false)
	exec(ins, "", "capturePayment", "done-1", "COMPLETED", fp, 200, `{}`, []byte(`{}`), 1, 1, nil, "2 hours", true)
	return db
}

func TestRecordsGetListStats(t *testing.T) {
	recordsDB(t)

	// get: one record, human and JSON; the hash is idem.Key.Hash.
	code, out, errOut := runCmd(t, "records", "get", "-operation", "createPayment", "done-1")
	if code != 0 || !strings.Contains(out, "COMPLETED") || !strings.Contains(out, "201, 14 bytes stored") {
		t.Fatalf("get: exit %d\n%s%s", code, out, errOut)
	}
	hash := idem.Key{Operation: "createPayment", Value: "done-1"}.Hash()
	if !strings.Contains(out, hash) {
		t.Errorf("get does not show the key hash %s:\n%s", hash, out)
	}
	// Without -operation, a key of two operations shows both.
	code, out, _ = runCmd(t, "records", "get", "-json", "done-1")
	var recs []recordJSON
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 2 {
		t.Fatalf("get -json: exit %d, %s", code, out)
	}
	// -show-body prints the stored response.
	code, out, _ = runCmd(t, "records", "get", "-operation", "createPayment", "-show-body", "done-1")
	if code != 0 || !strings.Contains(out, `{"id":"pay_1"}`) || !strings.Contains(out, "Content-Type: application/json") {
		t.Errorf("get -show-body: exit %d\n%s", code, out)
	}
	// A key that names nothing: exit 3.
	if code, _, errOut := runCmd(t, "records", "get", "nope"); code != exitNotFound || !strings.HasPrefix(errOut, "idemgen: records get: no record") {
		t.Errorf("get nope: exit %d, %q", code, errOut)
	}

	// list: what needs a person first.
	code, out, _ = runCmd(t, "records", "list", "-json")
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil {
		t.Fatalf("list: exit %d, %s", code, out)
	}
	var order []string
	for _, r := range recs {
		order = append(order, r.Tenant+"/"+r.Operation+"/"+r.Key)
	}
	want := "acme/createPayment/unknown-1 /createPayment/unknown-1 /createPayment/stuck-1 /createPayment/live-1 /capturePayment/done-1 /createPayment/done-1"
	if strings.Join(order, " ") != want {
		t.Errorf("list order:\n got %s\nwant %s", strings.Join(order, " "), want)
	}
	for _, r := range recs {
		if r.KeyHash != keyOf(r.Tenant, r.Operation, r.Key).Hash() {
			t.Errorf("list: %s: the database's hash %s differs from idem.Key.Hash %s", r.Key, r.KeyHash, keyOf(r.Tenant, r.Operation, r.Key).Hash())
		}
		if r.Key == "stuck-1" && !r.Abandoned || r.Key == "live-1" && r.Abandoned {
			t.Errorf("list: %s abandoned = %v", r.Key, r.Abandoned)
		}
	}
	// Filters.
	for args, want := range map[string]int{
		"-state in_progress":                     2,
		"-state UNKNOWN -tenant acme":            1,
		"-tenant=":                               5,
		"-operation capturePayment":              1,
		"-older-than 15m":                        4,
		"-hash " + hash:                          1,
		"-state COMPLETED -operation nope -json": 0,
	} {
		code, out, errOut := runCmd(t, append([]string{"records", "list", "-json"}, strings.Fields(args)...)...)
		recs = nil
		if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != want {
			t.Errorf("list %s: exit %d, %d records, want %d\n%s%s", args, code, len(recs), want, out, errOut)
		}
	}
	if code, _, _ := runCmd(t, "records", "list", "-limit", "0"); code != 2 {
		t.Errorf("list -limit 0: exit %d, want 2", code)
	}

	// stats
	code, out, _ = runCmd(t, "records", "stats", "-json")
	var st statsJSON
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("stats: exit %d, %s", code, out)
	}
	counts := map[string]int64{}
	for _, s := range st.ByState {
		counts[s.State] = s.Records
	}
	if st.Records != 6 || counts["IN_PROGRESS"] != 2 || counts["UNKNOWN"] != 2 || counts["COMPLETED"] != 2 ||
		st.OldestLiveSeconds == nil || *st.OldestLiveSeconds < 30*60 || st.TableBytes <= 0 {
		t.Errorf("stats: %+v", st)
	}
	if code, out, _ := runCmd(t, "records", "stats"); code != 0 || !strings.Contains(out, "oldest live claim") {
		t.Errorf("stats: exit %d\n%s", code, out)
	}
}

func TestRecordsResolve(t *testing.T) {
	db := recordsDB(t)
	state := func(tenant, op, key string) (st string, fence int64) {
		t.Helper()
		if err := db.QueryRow(context.Background(), `SELECT state, fence FROM idem_records WHERE tenant = $1 AND operation = $2 AND idempotency_key = $3`,
			tenant, op, key).Scan(&st, &fence); err != nil {
			t.Fatal(err)
		}
		return st, fence
	}

	// Usage errors: exit 2, nothing changed.
	for _, args := range [][]string{
		{"-as", "completed", "-reason", "x", "stuck-1"},                                                   // no status
		{"-as", "completed", "-status", "201", "-reason", "x", "stuck-1"},                                 // no body
		{"-as", "completed", "-status", "503", "-body", "{}", "-reason", "x", "stuck-1"},                  // a 5xx
		{"-as", "retryable", "-status", "201", "-reason", "x", "stuck-1"},                                 // a response for retryable
		{"-as", "done", "-reason", "x", "stuck-1"},                                                        // unknown -as
		{"-as", "expired", "stuck-1"},                                                                     // no reason
		{"-as", "expired", "-reason", "x", "unknown-1", "-tenant", "acme", "extra"},                       // two arguments
		{"-as", "expired", "-reason", "x", "done-1"},                                                      // two operations
		{"-as", "completed", "-status", "201", "-body", "", "-body-file", "f", "-reason", "x", "stuck-1"}, // two bodies
	} {
		if code, _, errOut := runCmd(t, append([]string{"records", "resolve"}, args...)...); code != 2 {
			t.Errorf("resolve %q: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	if st, _ := state("", "createPayment", "stuck-1"); st != "IN_PROGRESS" {
		t.Fatalf("a refused resolve changed the record: %s", st)
	}

	// Refused: a final record, a live lease without -force (exit 4).
	if code, _, errOut := runCmd(t, "records", "resolve", "-operation", "createPayment", "-as", "expired", "-reason", "x", "done-1"); code != exitRefused || !strings.Contains(errOut, "is COMPLETED") {
		t.Errorf("resolve a COMPLETED record: exit %d, %s", code, errOut)
	}
	code, _, errOut := runCmd(t, "records", "resolve", "-as", "retryable", "-reason", "x", "live-1")
	if code != exitRefused || !strings.Contains(errOut, "live lease") {
		t.Errorf("resolve a live lease: exit %d, %s", code, errOut)
	}

	// The stuck claim, completed with a response: fenced, recorded.
	body := filepath.Join(t.TempDir(), "body.json")
	os.WriteFile(body, []byte(`{"id":"pay_by_hand"}`), 0o600)
	code, out, errOut := runCmd(t, "records", "resolve", "-as", "completed", "-status", "201", "-body-file", body,
		"-header", "Content-Type: application/json", "-by", "alice", "-reason", "gateway shows charge ch_9", "-json", "stuck-1")
	var res resolutionJSON
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.From != "IN_PROGRESS" || res.To != "COMPLETED" || res.Fence != 3 {
		t.Fatalf("resolve stuck-1: exit %d, %s%s", code, out, errOut)
	}
	code, out, _ = runCmd(t, "records", "get", "-show-body", "stuck-1")
	if code != 0 || !strings.Contains(out, `{"id":"pay_by_hand"}`) || !strings.Contains(out, "by alice: IN_PROGRESS -> COMPLETED (fence 3): gateway shows charge ch_9") {
		t.Errorf("get after resolve:\n%s", out)
	}
	// Again: refused, it is COMPLETED now.
	if code, _, _ := runCmd(t, "records", "resolve", "-as", "expired", "-reason", "x", "stuck-1"); code != exitRefused {
		t.Errorf("second resolve: exit %d, want %d", code, exitRefused)
	}

	// The UNKNOWN record of tenant acme, as retryable; the other tenant's is untouched.
	if code, _, errOut := runCmd(t, "records", "resolve", "-tenant", "acme", "-as", "retryable", "-by", "bob", "-reason", "not charged", "unknown-1"); code != 0 {
		t.Fatalf("resolve unknown-1: exit %d, %s", code, errOut)
	}
	if st, fence := state("acme", "createPayment", "unknown-1"); st != "FAILED_RETRYABLE" || fence != 2 {
		t.Errorf("acme unknown-1: %s fence %d, want FAILED_RETRYABLE fence 2", st, fence)
	}
	if st, _ := state("", "createPayment", "unknown-1"); st != "UNKNOWN" {
		t.Errorf("the other tenant's unknown-1 is %s", st)
	}
	// Expired: due now.
	if code, _, _ := runCmd(t, "records", "resolve", "-as", "expired", "-reason", "client gave up", "unknown-1"); code != 0 {
		t.Fatalf("resolve as expired: exit %d", code)
	}
	var due bool
	db.QueryRow(context.Background(), `SELECT expires_at <= now() FROM idem_records WHERE tenant = '' AND idempotency_key = 'unknown-1'`).Scan(&due)
	if st, _ := state("", "createPayment", "unknown-1"); st != "EXPIRED" || !due {
		t.Errorf("unknown-1 as expired: %s, due %v", st, due)
	}
	// The live lease, with -force: fenced out, recorded as forced.
	if code, out, errOut := runCmd(t, "records", "resolve", "-as", "retryable", "-force", "-reason", "holder hung", "-json", "live-1"); code != 0 || !strings.Contains(out, `"forced": true`) {
		t.Errorf("resolve -force: exit %d, %s%s", code, out, errOut)
	}
	var n int
	db.QueryRow(context.Background(), `SELECT count(*) FROM idem_resolutions`).Scan(&n)
	if n != 4 {
		t.Errorf("%d resolutions recorded, want 4", n)
	}
}

func TestRecordsSealedBodiesAndReseal(t *testing.T) {
	db := recordsDB(t)
	ctx := context.Background()
	newKey := func(id string) (idemseal.Key, string) {
		k := idemseal.Key{ID: id, Secret: make([]byte, 32)}
		rand.Read(k.Secret)
		return k, id + ":" + base64.StdEncoding.EncodeToString(k.Secret)
	}
	k1, k1s := newKey("k1")
	_, k2s := newKey("k2")
	ring1, _ := idemseal.NewRing(k1)
	// sealed-1: a response sealed with k1, stored as the engine's admin API
	// stores one (an UNKNOWN record resolved as completed).
	if _, err := db.Exec(ctx, `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, expires_at)
		VALUES (idem_record_id('', 'createPayment', 'sealed-1'), '', 'createPayment', 'sealed-1', 'UNKNOWN', $1, 'v1', now() + interval '1 day')`, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.New(db, admin.Config{Sealer: idemseal.New(ring1)}).Resolve(ctx, admin.ResolveRequest{
		Key: idem.Key{Operation: "createPayment", Value: "sealed-1"}, As: admin.SettleCompleted, Status: 201,
		Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"pay_secret"}`),
		By: "test", Reason: "seed a sealed record",
	}); err != nil {
		t.Fatal(err)
	}

	// Without keys: reseal fails (exit 1, as documented for missing keys)
	// and says which variables to set.
	if code, _, errOut := runCmd(t, "records", "reseal", "-dry-run"); code != 1 || !strings.Contains(errOut, "IDEM_SEAL_KEYS") {
		t.Errorf("reseal without keys: exit %d, %s", code, errOut)
	}
	// -h prints the subcommand's flags and exits 0.
	if code, out, _ := runCmd(t, "records", "reseal", "-h"); code != 0 || !strings.Contains(out, "-plaintext") || !strings.Contains(out, "-dry-run") {
		t.Errorf("reseal -h: exit %d\n%s", code, out)
	}

	// Without keys: the body is named sealed, and not shown.
	code, out, _ := runCmd(t, "records", "get", "sealed-1")
	if code != 0 || !strings.Contains(out, "sealed with key k1") {
		t.Errorf("get: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCmd(t, "records", "get", "-show-body", "sealed-1"); code != 1 || !strings.Contains(errOut, "IDEM_SEAL_KEYS") {
		t.Errorf("get -show-body without keys: exit %d, %s", code, errOut)
	}
	// With the key: opened.
	t.Setenv("IDEM_SEAL_KEYS", k1s)
	if code, out, _ := runCmd(t, "records", "get", "-show-body", "sealed-1"); code != 0 || !strings.Contains(out, `{"id":"pay_secret"}`) {
		t.Errorf("get -show-body with k1: exit %d\n%s", code, out)
	}

	// Rotation: k2 current, k1 retired. A dry run changes nothing; reseal
	// moves sealed-1 to k2 and seals the plaintext bodies with -plaintext.
	t.Setenv("IDEM_SEAL_KEYS", k2s+","+k1s)
	code, out, _ = runCmd(t, "records", "reseal", "-dry-run", "-json")
	var rs resealJSON
	if code != 0 || json.Unmarshal([]byte(out), &rs) != nil || rs.Resealed != 1 || rs.Current != 2 {
		t.Fatalf("reseal -dry-run: exit %d, %s", code, out)
	}
	if code, out, errOut := runCmd(t, "records", "reseal", "-plaintext", "-batch", "1", "-json"); code != 0 ||
		json.Unmarshal([]byte(out), &rs) != nil || rs.Resealed != 3 || rs.Plaintext != 2 || rs.Scanned != 3 {
		t.Fatalf("reseal: exit %d, %s%s", code, out, errOut)
	}
	var kids []string
	rows, _ := db.Query(ctx, `SELECT response_body FROM idem_records WHERE response_body IS NOT NULL ORDER BY idempotency_key, operation`)
	for rows.Next() {
		var b []byte
		rows.Scan(&b)
		id, _ := idemseal.KeyID(b)
		kids = append(kids, id)
	}
	if strings.Join(kids, ",") != "k2,k2,k2" {
		t.Errorf("key ids after reseal: %v, want every body under k2", kids)
	}
	// k1 can go now: everything opens with k2 alone.
	t.Setenv("IDEM_SEAL_KEYS", k2s)
	if code, out, _ := runCmd(t, "records", "get", "-show-body", "sealed-1"); code != 0 || !strings.Contains(out, `{"id":"pay_secret"}`) {
		t.Errorf("get -show-body with k2 alone: exit %d\n%s", code, out)
	}
	if code, out, _ := runCmd(t, "records", "get", "-operation", "createPayment", "-show-body", "done-1"); code != 0 || !strings.Contains(out, `{"id":"pay_1"}`) {
		t.Errorf("a resealed plaintext body: exit %d\n%s", code, out)
	}
	// A key missing: reseal reports the records it cannot open, exit 1.
	_, k3s := newKey("k3")
	t.Setenv("IDEM_SEAL_KEYS", k3s)
	if code, _, errOut := runCmd(t, "records", "reseal"); code != 1 || !strings.Contains(errOut, "could not be opened") {
		t.Errorf("reseal without k2: exit %d, %s", code, errOut)
	}

}

// TestResolutionAuditTenant: the audit row of a resolution (idem_resolutions)
// names the tenant of the record it resolved, and `records get` shows each
// tenant's record its own resolutions only — two tenants may use the same
// key for the same operation.
func TestResolutionAuditTenant(t *testing.T) {
	db := recordsDB(t)
	ctx := context.Background()
	code, out, errOut := runCmd(t, "records", "resolve", "-tenant", "acme", "-as", "retryable", "-by", "bob", "-reason", "acme: not charged", "-json", "unknown-1")
	var res resolutionJSON
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Tenant != "acme" {
		t.Fatalf("resolve -tenant acme: exit %d, %s%s", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "records", "resolve", "-as", "expired", "-by", "carol", "-reason", "default tenant: client gave up", "unknown-1")
	if code != 0 {
		t.Fatalf("resolve in the default tenant: exit %d, %s", code, errOut)
	}

	type row struct {
		Tenant, Operation, Key, From, To, By, Reason string
		Fence                                        int64
	}
	rows, err := db.Query(ctx, `SELECT tenant, operation, idempotency_key, from_state, to_state, resolved_by, reason, fence
		FROM idem_resolutions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.Tenant, &x.Operation, &x.Key, &x.From, &x.To, &x.By, &x.Reason, &x.Fence)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"acme", "createPayment", "unknown-1", "UNKNOWN", "FAILED_RETRYABLE", "bob", "acme: not charged", 2},
		{"", "createPayment", "unknown-1", "UNKNOWN", "EXPIRED", "carol", "default tenant: client gave up", 4},
	}
	if len(got) != len(want) {
		t.Fatalf("audit rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("audit row %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	// Each tenant's record shows its own resolution, and only that one.
	for _, tc := range []struct{ tenant, by string }{{"acme", "bob"}, {"", "carol"}} {
		code, out, errOut := runCmd(t, "records", "get", "-tenant", tc.tenant, "-json", "unknown-1")
		var recs []recordJSON
		if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 1 {
			t.Fatalf("get -tenant %q: exit %d, %s%s", tc.tenant, code, out, errOut)
		}
		r := recs[0]
		if r.Tenant != tc.tenant || len(r.Resolutions) != 1 || r.Resolutions[0].By != tc.by {
			t.Errorf("get -tenant %q: tenant %q, resolutions %+v; want one by %s", tc.tenant, r.Tenant, r.Resolutions, tc.by)
		}
	}
}

// TestRecordsShards runs records over three PostgreSQL servers named by
// DATABASE_URLS, one tenant's records on each: get and resolve find the
// shard holding the key, list and stats cover every shard, and a key on no
// shard (or on two) is said to be.
func TestRecordsShards(t *testing.T) {
	var urls []string
	fp := make([]byte, 32)
	ins := `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
		attempts, fence, lease_expires_at, created_at, expires_at)
		VALUES (idem_record_id($1, 'createPayment', $2), $1, 'createPayment', $2, $3, $4, 'v1', 1, 1, now() - interval '1 minute', now() - interval '5 minutes', now() + interval '1 day')`
	var dbs []*pgtest.DB
	for i, server := range append([]string{""}, pgtest.StartServers(t, 2)...) {
		db := pgtest.New(t, pgtest.Options{Server: server})
		dbs = append(dbs, db)
		urls = append(urls, db.URL)
		tenant := []string{"acme", "globex", "initech"}[i]
		for _, r := range [][2]string{{"k-" + tenant, "UNKNOWN"}, {"shared", "FAILED_RETRYABLE"}} {
			if _, err := db.Exec(context.Background(), ins, tenant, r[0], r[1], fp); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("DATABASE_URL", "")
	t.Setenv("DATABASE_URLS", strings.Join(urls, "\n"))
	t.Setenv("IDEM_SEAL_KEYS", "")
	t.Setenv("IDEM_SEAL_KEYS_FILE", "")

	code, out, errOut := runCmd(t, "records", "get", "-tenant", "initech", "k-initech")
	if code != 0 || !strings.Contains(out, "UNKNOWN") || strings.Contains(out, "# shard") {
		t.Fatalf("get on the third shard: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "records", "get", "-tenant", "initech", "k-acme")
	if code != exitNotFound || !strings.Contains(errOut, "on any shard") {
		t.Fatalf("get of a key on no shard: exit %d, want %d\n%s", code, exitNotFound, errOut)
	}

	code, out, errOut = runCmd(t, "records", "list", "-state", "UNKNOWN")
	if code != 0 {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	for i, tenant := range []string{"acme", "globex", "initech"} {
		if !strings.Contains(out, "k-"+tenant) || !strings.Contains(out, "# shard "+string(rune('1'+i))+" of 3") {
			t.Errorf("list does not show shard %d's %s:\n%s", i+1, tenant, out)
		}
	}
	code, out, errOut = runCmd(t, "records", "stats")
	if code != 0 || strings.Count(out, "records: 2;") != 3 {
		t.Errorf("stats: exit %d, want 2 records on each of 3 shards\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCmd(t, "records", "resolve", "-tenant", "globex", "-as", "retryable", "-reason", "gateway says no charge", "-by", "oncall", "k-globex")
	if code != 0 || !strings.Contains(out, "UNKNOWN -> FAILED_RETRYABLE") {
		t.Fatalf("resolve on the second shard: exit %d\n%s%s", code, out, errOut)
	}
	var state string
	if err := dbs[1].QueryRow(context.Background(), `SELECT state FROM idem_records WHERE tenant = 'globex' AND idempotency_key = 'k-globex'`).Scan(&state); err != nil || state != "FAILED_RETRYABLE" {
		t.Errorf("the second shard holds %q (%v) after resolve, want FAILED_RETRYABLE", state, err)
	}

	// The same tenant and key on two shards (a tenant moved without its
	// records): resolve refuses rather than pick one.
	if _, err := dbs[2].Exec(context.Background(), ins, "acme", "k-acme", "UNKNOWN", fp); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCmd(t, "records", "resolve", "-tenant", "acme", "-as", "expired", "-reason", "r", "-by", "oncall", "k-acme")
	if code != exitRefused || !strings.Contains(errOut, "on 2 shards") {
		t.Errorf("resolve of a key on two shards: exit %d, want %d\n%s", code, exitRefused, errOut)
	}
}
