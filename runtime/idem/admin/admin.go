// Package admin is the operator's API of the idempotency engine: it reads
// the records the engine keeps (idem_records) and settles them by hand,
// through the engine's own queries and record codec. `idemgen records`, the
// on-call CLI, is a thin shell over it; a service's own admin endpoints may
// use it too.
//
// What it does, and the rules it keeps:
//
//   - Find, List, Stats and Resolutions read records, their counts and the
//     audit of past resolutions; StoredResponse and Open read a stored
//     response, opening a sealed one with Config.Sealer.
//   - Resolve settles an UNKNOWN record, an abandoned claim (IN_PROGRESS
//     whose lease lapsed; a live one only with Force) or a FAILED_RETRYABLE
//     one: as completed (retries get the given response, replayed), as
//     retryable (the next retry runs the handler again) or as expired (the
//     key starts over). The change is fenced like the engine's own writes:
//     it applies only to the state and fence read, and moves the fence on,
//     so a claim holder still running can no longer store its outcome. Each
//     resolution is recorded (idem_resolutions) with who and why.
//   - Reseal rewrites sealed values under the current key, so retired keys
//     can be dropped before the records expire by themselves.
//   - Sweeper retires records: it deletes those past their expiry in
//     bounded, paced batches, turns abandoned lease claims into UNKNOWN
//     records for a person to resolve (OnAbandoned), and counts what is
//     left in progress or unknown (SweepResult, LiveRecords). A service
//     runs one in the background (Sweeper.Run).
//
// An Admin, like a Sweeper, works on one database; with shards
// (idem.Config.Shard), make one per shard.
package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/sealcodec"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// DB is a connection or a pool: *pgx.Conn and *pgxpool.Pool are both.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Config configures an Admin.
type Config struct {
	// Sealer opens and seals stored values, as the engine's
	// (idem.Config.Sealer). Without one, a sealed value does not open
	// (idem.ErrSealed) and Resolve stores a response in plaintext.
	Sealer idem.Sealer
}

// Admin reads and settles the records of one database.
type Admin struct {
	db  DB
	q   *store.Queries
	cfg Config
}

// New returns an Admin of db.
func New(db DB, cfg Config) *Admin {
	return &Admin{db: db, q: store.New(db), cfg: cfg}
}

// Errors of the admin API; each is wrapped with what was found.
var (
	// ErrNotFound: no record matches.
	ErrNotFound = errors.New("no such record")
	// ErrRefused: the record is not in a state the call changes, holds a
	// live lease (see Resolution.Force), or changed since it was read.
	ErrRefused = errors.New("refused")
	// ErrInvalid: the call's arguments are not a valid request.
	ErrInvalid = errors.New("invalid")
	// ErrNoSchema: the database lacks idemgen's tables or their latest
	// migration.
	ErrNoSchema = errors.New("the database lacks idemgen's tables or their latest migration (start the service once, or run idem.Migrate)")
)

// noSchema marks an error about a missing table with ErrNoSchema.
func noSchema(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return fmt.Errorf("%w: %w", ErrNoSchema, err)
	}
	return err
}

// Record is an idempotency record as the table holds it, without its stored
// response (see StoredResponse).
type Record struct {
	Key idem.Key
	// KeyHash is Key.Hash(), the form logs and spans name a record by.
	KeyHash  string
	State    idem.State
	Attempts int32
	Fence    int64
	// LeaseExpiresAt is when the claim's lease lapses (zero: none);
	// LeaseLive, whether it has not yet, by the database's clock.
	LeaseExpiresAt time.Time
	LeaseLive      bool
	// TakenOver: the current claim took over an earlier one (Find only).
	TakenOver bool
	CreatedAt time.Time
	UpdatedAt time.Time
	// CompletedAt is zero until an outcome is stored (Find only).
	CompletedAt time.Time
	ExpiresAt   time.Time
	// Expired: ExpiresAt has passed, by the database's clock (Find only).
	Expired bool
	// SchemaVersion is the request schema's version the record was made
	// under (Find only).
	SchemaVersion string
	// ResponseStatus is the stored response's status (0: none); BodyBytes,
	// the size of its stored body.
	ResponseStatus int
	BodyBytes      int64
	// RecoveryPoint is the last recovery point saved (HasRecoveryPoint
	// false: none) and RecoveryBytes the size of its data (Find only).
	RecoveryPoint    string
	HasRecoveryPoint bool
	RecoveryBytes    int64
	// DBNow is the database's clock when the record was read (Find only).
	DBNow time.Time
}

// Abandoned reports whether r is a claim whose lease lapsed: its holder
// stopped, and a retry takes it over.
func (r Record) Abandoned() bool { return r.State == idem.StateInProgress && !r.LeaseLive }

func ts(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func status(s pgtype.Int4) int {
	if !s.Valid {
		return 0
	}
	return int(s.Int32)
}

func optText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

func keyOf(tenant, op, key string) idem.Key {
	return idem.Key{Tenant: tenant, Operation: op, Value: key}
}

// Find returns the records key names in tenant: one per operation, or only
// operation's when it is not "". None is not an error. Without an
// operation, it walks the table (only the record's id is indexed).
func (a *Admin) Find(ctx context.Context, tenant, operation, key string) ([]Record, error) {
	rows, err := a.q.FindRecords(ctx, store.FindRecordsParams{Tenant: tenant, IdempotencyKey: key, Operation: optText(operation)})
	if err != nil {
		return nil, noSchema(err)
	}
	out := make([]Record, len(rows))
	for i, r := range rows {
		k := keyOf(r.Tenant, r.Operation, r.IdempotencyKey)
		out[i] = Record{
			Key: k, KeyHash: k.Hash(), State: idem.State(r.State), Attempts: r.Attempts, Fence: r.Fence,
			LeaseExpiresAt: ts(r.LeaseExpiresAt), LeaseLive: r.LeaseLive, TakenOver: r.TakenOver,
			CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt), CompletedAt: ts(r.CompletedAt),
			ExpiresAt: ts(r.ExpiresAt), Expired: r.Expired, SchemaVersion: r.SchemaVersion,
			ResponseStatus: status(r.ResponseStatus), BodyBytes: r.BodyBytes,
			RecoveryPoint: r.RecoveryPoint.String, HasRecoveryPoint: r.RecoveryPoint.Valid, RecoveryBytes: r.RecoveryBytes,
			DBNow: ts(r.DbNow),
		}
	}
	return out, nil
}

// FindOne returns the one record key names in tenant (and operation, when
// not ""): ErrNotFound when there is none, ErrInvalid when the key names
// records of several operations and no operation is given.
func (a *Admin) FindOne(ctx context.Context, tenant, operation, key string) (Record, error) {
	recs, err := a.Find(ctx, tenant, operation, key)
	if err != nil {
		return Record{}, err
	}
	switch len(recs) {
	case 0:
		on := ""
		if operation != "" {
			on = ", operation " + operation
		}
		return Record{}, errorf(ErrNotFound, "no record for key %q (tenant %q%s)", key, tenant, on)
	case 1:
		return recs[0], nil
	}
	ops := make([]string, len(recs))
	for i, r := range recs {
		ops[i] = r.Key.Operation
	}
	return Record{}, errorf(ErrInvalid, "key %q names %d records (%s): give the operation",
		key, len(recs), strings.Join(ops, ", "))
}

// Filter selects records for List; its zero value selects all.
type Filter struct {
	State     idem.State // "": any
	Operation string     // "": any
	// Tenant, when not nil, selects one tenant ("" is the default tenant).
	Tenant *string
	// OlderThan selects records created at least this long ago (0: any).
	OlderThan time.Duration
	// KeyHash selects the record whose Key.Hash this is (a prefix of it
	// matches too).
	KeyHash string
	// Limit bounds the records returned (0: 50).
	Limit int
}

// List returns records by f, what needs a person first: UNKNOWN, then
// abandoned claims, then live claims, then the rest, oldest first. It walks
// the table, bounded by the limit, not by an index.
func (a *Admin) List(ctx context.Context, f Filter) ([]Record, error) {
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 0 || f.Limit > 100000 {
		return nil, errorf(ErrInvalid, "limit %d: want 1 to 100000", f.Limit)
	}
	if f.OlderThan < 0 {
		return nil, errorf(ErrInvalid, "older than %v is negative", f.OlderThan)
	}
	p := store.ListRecordsParams{State: optText(strings.ToUpper(string(f.State))), Operation: optText(f.Operation),
		KeyHash: optText(strings.ToLower(f.KeyHash)), RowLimit: int32(f.Limit)}
	if f.Tenant != nil {
		p.Tenant = pgtype.Text{String: *f.Tenant, Valid: true}
	}
	if f.OlderThan > 0 {
		p.OlderThanMs = pgtype.Int8{Int64: f.OlderThan.Milliseconds(), Valid: true}
	}
	rows, err := a.q.ListRecords(ctx, p)
	if err != nil {
		return nil, noSchema(err)
	}
	out := make([]Record, len(rows))
	for i, r := range rows {
		out[i] = Record{
			Key: keyOf(r.Tenant, r.Operation, r.IdempotencyKey), KeyHash: r.KeyHash,
			State: idem.State(r.State), Attempts: r.Attempts, Fence: r.Fence,
			LeaseExpiresAt: ts(r.LeaseExpiresAt), LeaseLive: r.LeaseLive,
			CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt), ExpiresAt: ts(r.ExpiresAt),
			ResponseStatus: status(r.ResponseStatus), BodyBytes: r.BodyBytes,
		}
	}
	return out, nil
}

// Count is the number of records of one operation in one state, and the
// bytes of their stored bodies.
type Count struct {
	Operation string
	State     idem.State
	Records   int64
	BodyBytes int64
}

// Stats is the table at a glance.
type Stats struct {
	// Counts are by operation and state, sorted.
	Counts []Count
	// OldestLive is when the oldest live claim (IN_PROGRESS or UNKNOWN) was
	// made; zero when there is none.
	OldestLive time.Time
	// TableBytes is the table's size on disk with its indexes and TOAST.
	TableBytes int64
	// DBNow is the database's clock.
	DBNow time.Time
}

// Stats counts records by operation and state: a walk of the table.
func (a *Admin) Stats(ctx context.Context) (Stats, error) {
	rows, err := a.q.CountByStateAndOperation(ctx)
	if err != nil {
		return Stats{}, noSchema(err)
	}
	t, err := a.q.TableStats(ctx)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{OldestLive: ts(t.OldestLive), TableBytes: t.TotalBytes, DBNow: ts(t.DbNow)}
	for _, r := range rows {
		out.Counts = append(out.Counts, Count{Operation: r.Operation, State: idem.State(r.State), Records: r.Records, BodyBytes: r.BodyBytes})
	}
	return out, nil
}

// StoredResponse is a record's stored response as the table holds it: the
// status, and the headers and body columns, sealed or not.
type StoredResponse struct {
	Status        int
	HeadersColumn []byte
	BodyColumn    []byte
}

// StoredResponse returns k's stored response (a zero one when it has
// none); ErrNotFound when there is no such record.
func (a *Admin) StoredResponse(ctx context.Context, k idem.Key) (StoredResponse, error) {
	r, err := a.q.GetStored(ctx, store.GetStoredParams{Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value})
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredResponse{}, errorf(ErrNotFound, "%s %q (tenant %q)", k.Operation, k.Value, k.Tenant)
	}
	if err != nil {
		return StoredResponse{}, noSchema(err)
	}
	return StoredResponse{Status: status(r.ResponseStatus), HeadersColumn: r.ResponseHeaders, BodyColumn: r.ResponseBody}, nil
}

// Open returns the headers (a JSON object of name -> values) and body of
// k's stored response s, opened with Config.Sealer when sealed: what a
// replay sends. A sealed response without a Sealer is idem.ErrSealed, one
// whose columns were changed after sealing idem.ErrRecordAltered.
func (a *Admin) Open(ctx context.Context, k idem.Key, s StoredResponse) (headersJSON, body []byte, err error) {
	return sealcodec.DecodeResponse(ctx, a.cfg.Sealer, sealed(k), s.Status, s.HeadersColumn, s.BodyColumn)
}

func sealed(k idem.Key) sealcodec.Record {
	return sealcodec.Record{Tenant: k.Tenant, Operation: k.Operation, Key: k.Value}
}

// Resolution is a record's settlement by hand, as recorded
// (idem_resolutions).
type Resolution struct {
	From, To idem.State
	// Fence is the record's fence after the resolution.
	Fence int64
	// ResponseStatus is the status of the response given (0: none).
	ResponseStatus int
	// Forced: the resolution fenced out a live claim.
	Forced bool
	By     string
	Reason string
	At     time.Time
}

// Resolutions returns k's resolutions, oldest first.
func (a *Admin) Resolutions(ctx context.Context, k idem.Key) ([]Resolution, error) {
	rows, err := a.q.Resolutions(ctx, store.ResolutionsParams{Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value})
	if err != nil {
		return nil, noSchema(err)
	}
	out := make([]Resolution, len(rows))
	for i, r := range rows {
		out[i] = Resolution{From: idem.State(r.FromState), To: idem.State(r.ToState), Fence: r.Fence,
			ResponseStatus: status(r.ResponseStatus), Forced: r.Forced, By: r.ResolvedBy, Reason: r.Reason, At: ts(r.ResolvedAt)}
	}
	return out, nil
}

// kindError is an error of one of the kinds above, worded on its own.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &kindError{kind, fmt.Sprintf(format, args...)}
}
