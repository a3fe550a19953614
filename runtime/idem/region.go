package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem/internal/regions"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// Regions (docs/scaling.md, "Regions"). Each region runs its own PostgreSQL
// cluster; its engine keeps idemgen's tables in the region's own schema
// (schema.RegionSchema: idem_<name>, first on the pool's search_path),
// and only it writes them. Each region publishes its idem_records, and
// every other region subscribes to it into a table of the same
// schema-qualified name that nothing else writes: native logical
// replication of PostgreSQL 15, one way per pair, so no change ever comes
// back to where it was made and no two writers meet in one table. A
// record's home region is the schema it lives in.
//
// Two triggers per peer compare the two copies of a key whenever either
// changes, and write what they find into idem_region_conflicts: a key
// claimed in two regions (possible only while the peer's record had not
// replicated yet) is a conflict, decided by the same rule on every node
// (the rule of package schema's region setup), and the losing region
// queues a compensation for its own execution when it had completed.
//
// Package runtime/idem/schema sets a region's database up (SetupRegion,
// SubscribeRegion: the schemas, the replica tables, the triggers, the
// publication); this file is what the engine does with it at run time: the
// home check of every keyed request, and the conflicts' audit and
// compensations (Region.Conflicts, DrainCompensations, PruneConflicts).

// HomeRegionHeader names, on every response of a keyed request served by a
// region engine, the region the key belongs to.
const HomeRegionHeader = "Idempotency-Home-Region"

// Region configures an engine that serves one region of several. Set it in
// Config.Region; nil (the default) is one region and costs nothing.
type Region struct {
	// Name is this region's name: a lower-case letter, then lower-case
	// letters, digits or underscores, at most 30 bytes. Its tables live in
	// the schema schema.RegionSchema(Name) (package runtime/idem/schema),
	// which must come first on the search path of the engine's connections
	// (search_path=idem_<name>,public).
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

func (r *Region) validate() error {
	if r == nil {
		return errors.New("idem: nil Region")
	}
	return regions.Validate(r.Name, r.Peers)
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
		c.Name, regions.Schema(c.Name))}
	for i, p := range c.Peers {
		parts = append(parts, fmt.Sprintf("SELECT %d, '%s' FROM %s.idem_records WHERE id = $1 AND tenant = $2 AND operation = $3 AND idempotency_key = $4",
			i+1, p, regions.Schema(p)))
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
		if err := regions.VerifySearchPath(ctx, e.db, r.Name); err != nil {
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
	return &idemproblem.Problem{Status: http.StatusMisdirectedRequest, Code: idemproblem.CodeMisdirected, Reason: idemproblem.ReasonWrongRegion,
		Detail: fmt.Sprintf("the idempotency key belongs to region %s: send this request and its retries there", home)}
}

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
	rows, err := db.Query(ctx, "SELECT "+regionConflictColumns+" FROM "+regions.Schema(r.Name)+
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
	table := regions.Schema(r.Name) + ".idem_region_conflicts"
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
	tag, err := db.Exec(ctx, "DELETE FROM "+regions.Schema(r.Name)+".idem_region_conflicts WHERE compensation <> 'QUEUED' AND updated_at < now() - make_interval(secs => $1)",
		olderThan.Seconds())
	if err != nil {
		return 0, fmt.Errorf("idem: region %s: prune conflicts: %w", r.Name, err)
	}
	return tag.RowsAffected(), nil
}
