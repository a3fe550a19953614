package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/jackc/pgx/v5"
)

// Regions (docs/scaling.md, "Regions"). Each region runs its own PostgreSQL
// cluster; its engine keeps idemgen's tables in the region's own schema
// (RegionSchema: idem_<name>, first on the pool's search_path), and only
// it writes them. Each region publishes its idem_records, and every other
// region subscribes to it into a table of the same schema-qualified name
// that nothing else writes: native logical replication of PostgreSQL 15,
// one way per pair, so no change ever comes back to where it was made and
// no two writers meet in one table. A record's home region is the schema it
// lives in.
//
// Two triggers per peer compare the two copies of a key whenever either
// changes, and write what they find into idem_region_conflicts: a key
// claimed in two regions (possible only while the peer's record had not
// replicated yet) is a conflict, decided by the same rule on every node
// (regionWinnerSQL), and the losing region queues a compensation for its
// own execution when it had completed.

// HomeRegionHeader names, on every response of a keyed request served by a
// region engine, the region the key belongs to.
const HomeRegionHeader = "Idempotency-Home-Region"

// Problem code and reason of a request that reached a region other than its
// key's home.
const (
	CodeMisdirected    = "ERR421_MISDIRECTED_REQUEST"
	ReasonWrongRegion  = "IDEMPOTENCY_KEY_HOME_REGION"
	regionLockClass    = 1768187245 // first key of the triggers' advisory locks
	maxRegionNameBytes = 30
)

// Region configures an engine that serves one region of several. Set it in
// Config.Region; nil (the default) is one region and costs nothing.
type Region struct {
	// Name is this region's name: a lower-case letter, then lower-case
	// letters, digits or underscores, at most 30 bytes. Its tables live in
	// the schema RegionSchema(Name), which must come first on the search
	// path of the engine's connections (search_path=idem_<name>,public).
	Name string
	// Peers are the other regions, whose records replicate into this
	// region's database under their own schemas.
	Peers []string

	prep *regionPrep // set on the engine's copy (Config.Region) by New
}

// regionPrep is what an engine prepares of its Region once.
type regionPrep struct {
	homeSQL  string
	verified sync.Map // *Engine (one per shard) -> struct{}: its search path was checked
}

var regionName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// RegionSchema is the schema that holds the records of region name, in its
// own database and, as a read-only replica, in every peer's.
func RegionSchema(name string) string { return "idem_" + name }

// RegionSubscription is the name of the subscription through which region
// local receives peer's records.
func RegionSubscription(local, peer string) string { return "idem_" + local + "_from_" + peer }

func (r *Region) validate() error {
	if r == nil {
		return errors.New("idem: nil Region")
	}
	seen := map[string]bool{}
	for i, n := range append([]string{r.Name}, r.Peers...) {
		what := "Region.Name"
		if i > 0 {
			what = fmt.Sprintf("Region.Peers[%d]", i-1)
		}
		if !regionName.MatchString(n) || len(n) > maxRegionNameBytes {
			return fmt.Errorf("idem: %s %q: want a lower-case letter, then lower-case letters, digits or _ (at most %d bytes)", what, n, maxRegionNameBytes)
		}
		if seen[n] {
			return fmt.Errorf("idem: %s %q named twice", what, n)
		}
		seen[n] = true
	}
	if len(r.Peers) == 0 {
		return fmt.Errorf("idem: region %q has no peers", r.Name)
	}
	return nil
}

// prepared returns a copy of r, validated, with its statements built.
func (r *Region) prepared() (*Region, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	c := &Region{Name: r.Name, Peers: append([]string(nil), r.Peers...), prep: &regionPrep{}}
	// Where does the key live? Here first (a key both regions claimed is
	// served where the request is), else the first peer that has it.
	parts := []string{fmt.Sprintf("SELECT 0 AS o, '%s' AS region FROM %s.idem_records WHERE id = $1 AND tenant = $2 AND operation = $3 AND idempotency_key = $4",
		c.Name, RegionSchema(c.Name))}
	for i, p := range c.Peers {
		parts = append(parts, fmt.Sprintf("SELECT %d, '%s' FROM %s.idem_records WHERE id = $1 AND tenant = $2 AND operation = $3 AND idempotency_key = $4",
			i+1, p, RegionSchema(p)))
	}
	c.prep.homeSQL = "SELECT region FROM (" + strings.Join(parts, " UNION ALL ") + ") AS homes ORDER BY o LIMIT 1"
	return c, nil
}

// checkHome is the region step of a keyed request, before the record is
// read: a key whose record replicated here from another region is refused
// with 421 naming its home, which the client (runtime/idemclient with
// WithRegions) sends it to; any other key is this region's. One statement,
// on the request's database; nothing of this runs without Config.Region.
func (e *Engine) checkHome(rq *request) error {
	r := e.cfg.Region
	ctx := rq.r.Context()
	if _, ok := r.prep.verified.Load(e); !ok {
		if err := verifyRegionSchema(ctx, e.db, r.Name); err != nil {
			return err
		}
		r.prep.verified.Store(e, struct{}{})
	}
	var home string
	err := e.db.QueryRow(ctx, r.prep.homeSQL, rq.ref.id, rq.key.Tenant, rq.key.Operation, rq.key.Value).Scan(&home)
	if errors.Is(err, pgx.ErrNoRows) {
		home = r.Name
	} else if err != nil {
		return fmt.Errorf("idem: region %s: look up the home region of the key: %w", r.Name, err)
	}
	rq.w.Header().Set(HomeRegionHeader, home)
	if home == r.Name {
		return nil
	}
	return &idemproblem.Problem{Status: http.StatusMisdirectedRequest, Code: CodeMisdirected, Reason: ReasonWrongRegion,
		Detail: fmt.Sprintf("the idempotency key belongs to region %s: send this request and its retries there", home)}
}

// verifyRegionSchema checks that db's unqualified table names resolve to
// the region's schema, where the engine's statements must write.
func verifyRegionSchema(ctx context.Context, db DB, name string) error {
	var cur *string
	if err := db.QueryRow(ctx, "SELECT current_schema()").Scan(&cur); err != nil {
		return fmt.Errorf("idem: region %s: read the search path: %w", name, err)
	}
	if cur == nil || *cur != RegionSchema(name) {
		got := "no schema"
		if cur != nil {
			got = "schema " + *cur
		}
		return fmt.Errorf("idem: region %s: the database's tables resolve to %s, want %s: open its connections with search_path=%s,public (and run SetupRegion)",
			name, got, RegionSchema(name), RegionSchema(name))
	}
	return nil
}

// SetupRegion prepares region r's database, db: its schema and idemgen's
// migrations in it, a replica table for each peer's records, the conflict
// table and triggers, and the publication of r's records. db's
// connections must have search_path=idem_<r.Name>,public (as the engine's);
// the schemas are created first. It may run again (after adding a peer, or
// on every start): each step is skipped when done. The role needs CREATE
// on the database; publications need the table's owner.
func SetupRegion(ctx context.Context, db DB, r Region) error {
	if err := r.validate(); err != nil {
		return err
	}
	for _, n := range append([]string{r.Name}, r.Peers...) {
		if _, err := db.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+RegionSchema(n)); err != nil {
			return fmt.Errorf("idem: region %s: create schema %s: %w", r.Name, RegionSchema(n), err)
		}
	}
	if err := verifyRegionSchema(ctx, db, r.Name); err != nil {
		return err
	}
	if err := Migrate(ctx, db); err != nil {
		return fmt.Errorf("idem: region %s: %w", r.Name, err)
	}
	if _, err := db.Exec(ctx, regionDDL(r)); err != nil {
		return fmt.Errorf("idem: region %s: conflict table and triggers: %w", r.Name, err)
	}
	return nil
}

// SubscribeRegion makes region local's database (db, a role allowed to
// create subscriptions: a superuser on PostgreSQL 15) receive peer's
// records from peer's database at conninfo (a libpq connection string or
// URL, as seen from local's server). The subscription copies the records
// peer already has, then follows its changes. Nothing is done when it
// exists already.
func SubscribeRegion(ctx context.Context, db DB, local, peer, conninfo string) error {
	r := Region{Name: local, Peers: []string{peer}}
	if err := r.validate(); err != nil {
		return err
	}
	sub := RegionSubscription(local, peer)
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM pg_catalog.pg_subscription WHERE subname = $1", sub).Scan(&n); err != nil {
		return fmt.Errorf("idem: region %s: look for subscription %s: %w", local, sub, err)
	}
	if n > 0 {
		return nil
	}
	// CREATE SUBSCRIPTION takes no parameters and refuses a transaction.
	q := fmt.Sprintf("CREATE SUBSCRIPTION %s CONNECTION '%s' PUBLICATION %s", sub,
		strings.ReplaceAll(conninfo, "'", "''"), RegionSchema(peer))
	if _, err := db.Exec(ctx, q); err != nil {
		return fmt.Errorf("idem: region %s: subscribe to region %s: %w", local, peer, err)
	}
	return nil
}

// regionDDL is the conflict machinery of region r, every name schema-
// qualified: logical replication applies changes with an empty search
// path, and the triggers on the peers' tables run there.
func regionDDL(r Region) string {
	L := RegionSchema(r.Name)
	var b strings.Builder
	rep := strings.NewReplacer("{{L}}", L, "{{l}}", r.Name, "{{lock}}", fmt.Sprint(regionLockClass))
	b.WriteString(rep.Replace(regionTablesSQL))
	var localChecks strings.Builder
	for _, p := range r.Peers {
		prep := strings.NewReplacer("{{L}}", L, "{{l}}", r.Name, "{{P}}", RegionSchema(p), "{{p}}", p, "{{lock}}", fmt.Sprint(regionLockClass))
		b.WriteString(prep.Replace(regionPeerSQL))
		localChecks.WriteString(prep.Replace(regionLocalCheckSQL))
	}
	b.WriteString(strings.NewReplacer("{{L}}", L, "{{checks}}", localChecks.String(), "{{lock}}", fmt.Sprint(regionLockClass)).Replace(regionLocalSQL))
	b.WriteString(rep.Replace(regionPublicationSQL))
	return b.String()
}

// regionWinnerSQL is the conflict rule, the same function on every node:
// of two records of one key, COMPLETED supersedes FAILED_REPLAYABLE, which
// supersedes a claim (IN_PROGRESS, UNKNOWN), which supersedes
// FAILED_RETRYABLE and EXPIRED; between two of the same rank the region
// whose name sorts first (bytewise) wins, and between two records of one
// region (which two regions' tables never hold) the earlier created_at.
// It names the winning region.
const regionTablesSQL = `
CREATE OR REPLACE FUNCTION {{L}}.idem_region_rank(state text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE state WHEN 'COMPLETED' THEN 3 WHEN 'FAILED_REPLAYABLE' THEN 2
        WHEN 'IN_PROGRESS' THEN 1 WHEN 'UNKNOWN' THEN 1 ELSE 0 END
$$;

CREATE OR REPLACE FUNCTION {{L}}.idem_region_winner(a text, a_state text, a_created timestamptz,
    b text, b_state text, b_created timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN {{L}}.idem_region_rank(a_state) > {{L}}.idem_region_rank(b_state) THEN a
        WHEN {{L}}.idem_region_rank(a_state) < {{L}}.idem_region_rank(b_state) THEN b
        WHEN a COLLATE "C" < b COLLATE "C" THEN a
        WHEN b COLLATE "C" < a COLLATE "C" THEN b
        WHEN a_created <= b_created THEN a
        ELSE b END
$$;

-- One row per key that two regions both hold, seen from this region: its
-- state here and there, the winner, and whether this region must undo its
-- own execution (QUEUED: it completed and lost), drained by the service
-- (Region.DrainCompensations) to DONE.
CREATE TABLE IF NOT EXISTS {{L}}.idem_region_conflicts (
    id              uuid        NOT NULL,
    peer            text        NOT NULL,
    tenant          text        NOT NULL,
    operation       text        NOT NULL,
    idempotency_key text        NOT NULL,
    state           text        NOT NULL,
    peer_state      text        NOT NULL,
    winner          text        NOT NULL,
    compensation    text        NOT NULL,
    detected_at     timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    compensated_at  timestamptz,
    PRIMARY KEY (id, peer),
    CONSTRAINT idem_region_conflicts_compensation_check CHECK (compensation IN ('NONE', 'QUEUED', 'DONE'))
);
CREATE INDEX IF NOT EXISTS idem_region_conflicts_queued_idx ON {{L}}.idem_region_conflicts (detected_at)
    WHERE compensation = 'QUEUED';

-- note records what the two copies of a key say now. A compensation once
-- queued stays queued (or done): the execution it undoes happened.
CREATE OR REPLACE FUNCTION {{L}}.idem_region_note(p_id uuid, p_tenant text, p_operation text, p_key text,
    p_state text, p_created timestamptz, p_peer text, p_peer_state text, p_peer_created timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    w text := {{L}}.idem_region_winner('{{l}}', p_state, p_created, p_peer, p_peer_state, p_peer_created);
    comp text := CASE WHEN w <> '{{l}}' AND p_state = 'COMPLETED' THEN 'QUEUED' ELSE 'NONE' END;
BEGIN
    INSERT INTO {{L}}.idem_region_conflicts AS c
        (id, peer, tenant, operation, idempotency_key, state, peer_state, winner, compensation)
    VALUES (p_id, p_peer, p_tenant, p_operation, p_key, p_state, p_peer_state, w, comp)
    ON CONFLICT (id, peer) DO UPDATE SET state = excluded.state, peer_state = excluded.peer_state,
        winner = excluded.winner, updated_at = pg_catalog.now(),
        compensation = CASE WHEN c.compensation = 'NONE' THEN excluded.compensation ELSE c.compensation END;
END
$$;
`

// regionPeerSQL is, per peer, the replica table its records are applied
// to and the trigger that compares each applied row with this region's.
// The advisory lock (per key, held to the end of the transaction, taken
// by both triggers after their row is written) makes the later of two
// concurrent writers of one key see the other's committed row.
const regionPeerSQL = `
CREATE TABLE IF NOT EXISTS {{P}}.idem_records (LIKE {{L}}.idem_records INCLUDING ALL);

CREATE OR REPLACE FUNCTION {{L}}.idem_region_from_{{p}}() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    l record;
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock({{lock}}, pg_catalog.hashtext(NEW.id::text));
    SELECT state, created_at INTO l FROM {{L}}.idem_records WHERE id = NEW.id;
    IF FOUND THEN
        PERFORM {{L}}.idem_region_note(NEW.id, NEW.tenant, NEW.operation, NEW.idempotency_key,
            l.state, l.created_at, '{{p}}', NEW.state, NEW.created_at);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER idem_region_from_{{p}} AFTER INSERT OR UPDATE ON {{P}}.idem_records
    FOR EACH ROW EXECUTE FUNCTION {{L}}.idem_region_from_{{p}}();
-- ALWAYS: the apply worker of a subscription runs as a replica, which
-- fires no ordinary trigger.
ALTER TABLE {{P}}.idem_records ENABLE ALWAYS TRIGGER idem_region_from_{{p}};
`

const regionLocalCheckSQL = `
    SELECT state, created_at INTO p FROM {{P}}.idem_records WHERE id = NEW.id;
    IF FOUND THEN
        PERFORM {{L}}.idem_region_note(NEW.id, NEW.tenant, NEW.operation, NEW.idempotency_key,
            NEW.state, NEW.created_at, '{{p}}', p.state, p.created_at);
    END IF;
`

// regionLocalSQL compares each of this region's own record writes that set
// a state with the peers' copies.
const regionLocalSQL = `
CREATE OR REPLACE FUNCTION {{L}}.idem_region_local() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    p record;
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock({{lock}}, pg_catalog.hashtext(NEW.id::text));
{{checks}}
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER idem_region_local AFTER INSERT OR UPDATE OF state ON {{L}}.idem_records
    FOR EACH ROW EXECUTE FUNCTION {{L}}.idem_region_local();
`

const regionPublicationSQL = `
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = '{{L}}') THEN
        CREATE PUBLICATION {{L}} FOR TABLE {{L}}.idem_records;
    END IF;
END
$$;
`

// RegionConflict is a key two regions both hold, as region Region sees it.
type RegionConflict struct {
	ID        string // the record id (uuid)
	Tenant    string
	Operation string
	Key       string
	Region    string // where this row was read
	Peer      string
	State     string // the record's state in Region
	PeerState string // and in Peer
	Winner    string // the region whose record the rule keeps
	// Compensation is NONE (nothing to undo here), QUEUED (this region's
	// execution lost and waits for DrainCompensations) or DONE.
	Compensation  string
	DetectedAt    time.Time
	UpdatedAt     time.Time
	CompensatedAt *time.Time
}

const regionConflictColumns = `id::text, tenant, operation, idempotency_key, peer, state, peer_state, winner,
    compensation, detected_at, updated_at, compensated_at`

func scanRegionConflict(row pgx.Row, region string) (RegionConflict, error) {
	c := RegionConflict{Region: region}
	err := row.Scan(&c.ID, &c.Tenant, &c.Operation, &c.Key, &c.Peer, &c.State, &c.PeerState, &c.Winner,
		&c.Compensation, &c.DetectedAt, &c.UpdatedAt, &c.CompensatedAt)
	return c, err
}

// Conflicts lists the conflicts region r's database (db) has recorded, the
// oldest first.
func (r Region) Conflicts(ctx context.Context, db DB) ([]RegionConflict, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, "SELECT "+regionConflictColumns+" FROM "+RegionSchema(r.Name)+
		".idem_region_conflicts ORDER BY detected_at, id, peer")
	if err != nil {
		return nil, fmt.Errorf("idem: region %s: read conflicts: %w", r.Name, err)
	}
	defer rows.Close()
	var out []RegionConflict
	for rows.Next() {
		c, err := scanRegionConflict(rows, r.Name)
		if err != nil {
			return nil, fmt.Errorf("idem: region %s: read conflicts: %w", r.Name, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("idem: region %s: read conflicts: %w", r.Name, err)
	}
	return out, nil
}

// DrainCompensations hands each QUEUED compensation of region r's database
// (db) to fn, at most limit of them (limit <= 0: all), one transaction each:
// fn undoes (or flags) the losing execution with tx, and the conflict
// becomes DONE in the same transaction, so a compensation commits with its
// effect or not at all. Concurrent drainers skip each other's rows. An
// error from fn rolls its transaction back and ends the drain, the
// compensation still QUEUED. It returns how many were done.
func (r Region) DrainCompensations(ctx context.Context, db DB, limit int,
	fn func(ctx context.Context, tx pgx.Tx, c RegionConflict) error) (int, error) {
	if err := r.validate(); err != nil {
		return 0, err
	}
	table := RegionSchema(r.Name) + ".idem_region_conflicts"
	done := 0
	for limit <= 0 || done < limit {
		n, err := r.drainOne(ctx, db, table, fn)
		if err != nil || n == 0 {
			return done, err
		}
		done++
	}
	return done, nil
}

func (r Region) drainOne(ctx context.Context, db DB, table string,
	fn func(ctx context.Context, tx pgx.Tx, c RegionConflict) error) (int, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return 0, fmt.Errorf("idem: region %s: drain compensations: begin: %w", r.Name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	c, err := scanRegionConflict(tx.QueryRow(ctx, "SELECT "+regionConflictColumns+" FROM "+table+
		" WHERE compensation = 'QUEUED' ORDER BY detected_at LIMIT 1 FOR UPDATE SKIP LOCKED"), r.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("idem: region %s: drain compensations: %w", r.Name, err)
	}
	if err := fn(ctx, tx, c); err != nil {
		return 0, fmt.Errorf("idem: region %s: compensate key %q of operation %s: %w", r.Name, c.Key, c.Operation, err)
	}
	if _, err := tx.Exec(ctx, "UPDATE "+table+" SET compensation = 'DONE', compensated_at = now(), updated_at = now() WHERE id = $1 AND peer = $2",
		c.ID, c.Peer); err != nil {
		return 0, fmt.Errorf("idem: region %s: mark compensation done: %w", r.Name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("idem: region %s: drain compensations: commit: %w", r.Name, err)
	}
	return 1, nil
}

// PruneConflicts deletes the conflicts of region r's database (db) that
// need nothing more (compensation NONE or DONE) and have not changed for
// olderThan: idem_region_conflicts is an audit trail the sweeper does not
// touch, so a service prunes it on its own schedule (after its records'
// ttl, say). Queued compensations are never deleted. It returns how many
// rows went.
func (r Region) PruneConflicts(ctx context.Context, db DB, olderThan time.Duration) (int64, error) {
	if err := r.validate(); err != nil {
		return 0, err
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("idem: region %s: prune conflicts older than %v: negative", r.Name, olderThan)
	}
	tag, err := db.Exec(ctx, "DELETE FROM "+RegionSchema(r.Name)+".idem_region_conflicts WHERE compensation <> 'QUEUED' AND updated_at < now() - make_interval(secs => $1)",
		olderThan.Seconds())
	if err != nil {
		return 0, fmt.Errorf("idem: region %s: prune conflicts: %w", r.Name, err)
	}
	return tag.RowsAffected(), nil
}
