package schema

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/regions"
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

// regionLockClass is the first key of the triggers' advisory locks.
const regionLockClass = 1768187245

// RegionSchema is the schema that holds the records of region name, in its
// own database and, as a read-only replica, in every peer's.
func RegionSchema(name string) string { return regions.Schema(name) }

// RegionSubscription is the name of the subscription through which region
// local receives peer's records.
func RegionSubscription(local, peer string) string { return "idem_" + local + "_from_" + peer }

// SetupRegion prepares region r's database, db: its schema and idemgen's
// migrations in it, a replica table for each peer's records, the conflict
// table and triggers, and the publication of r's records. db's
// connections must have search_path=idem_<r.Name>,public (as the engine's);
// the schemas are created first. It may run again (after adding a peer, or
// on every start): each step is skipped when done. The role needs CREATE
// on the database; publications need the table's owner.
func SetupRegion(ctx context.Context, db idem.DB, r idem.Region) error {
	if err := regions.Validate(r.Name, r.Peers); err != nil {
		return err
	}
	for _, n := range append([]string{r.Name}, r.Peers...) {
		if _, err := db.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+RegionSchema(n)); err != nil {
			return fmt.Errorf("idem: region %s: create schema %s: %w", r.Name, RegionSchema(n), err)
		}
	}
	if err := regions.VerifySearchPath(ctx, db, r.Name); err != nil {
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
func SubscribeRegion(ctx context.Context, db idem.DB, local, peer, conninfo string) error {
	if err := regions.Validate(local, []string{peer}); err != nil {
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
func regionDDL(r idem.Region) string {
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
