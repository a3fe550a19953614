package idem

import (
	"context"
	"io/fs"
	"time"

	"github.com/idemgen/idemgen/queries"
	"github.com/idemgen/idemgen/runtime/idem/internal/migrations"
	"github.com/idemgen/idemgen/runtime/idem/internal/sweep"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

// The names below moved out of package idem before v0.1.0 and stay here,
// deprecated, until v0.3.0 (CHANGELOG.md says how to upgrade). Types are
// aliases, so values pass between old and new code. Package schema and
// package admin import idem, so their functions are forwarded to the
// internal packages both use rather than aliased.

// Problem is idemproblem.Problem.
//
// Deprecated: use idemproblem.Problem (runtime/idemproblem).
type Problem = idemproblem.Problem

// Violation is idemproblem.Violation.
//
// Deprecated: use idemproblem.Violation (runtime/idemproblem).
type Violation = idemproblem.Violation

// ValidationError is idemproblem.ValidationError.
//
// Deprecated: use idemproblem.ValidationError (runtime/idemproblem).
type ValidationError = idemproblem.ValidationError

// ErrorBody is idemproblem.ErrorBody.
//
// Deprecated: use idemproblem.ErrorBody (runtime/idemproblem).
type ErrorBody = idemproblem.ErrorBody

// ErrorMember is idemproblem.ErrorMember.
//
// Deprecated: use idemproblem.ErrorMember (runtime/idemproblem).
type ErrorMember = idemproblem.ErrorMember

// The codes and reasons of the HTTP contract moved to idemproblem; these
// forward to them (the same values).
//
// Deprecated: use idemproblem.ReasonConflict (runtime/idemproblem) and the
// other Code and Reason constants of that package, of the same names.
const (
	CodeMalformedHeader  = idemproblem.CodeMalformedHeader
	CodeInvalidRequest   = idemproblem.CodeInvalidRequest
	CodeUnauthorized     = idemproblem.CodeUnauthorized
	CodeForbidden        = idemproblem.CodeForbidden
	CodeNotFound         = idemproblem.CodeNotFound
	CodeMethodNotAllowed = idemproblem.CodeMethodNotAllowed
	CodeRequestTimeout   = idemproblem.CodeRequestTimeout
	CodeConflict         = idemproblem.CodeConflict
	CodeTooLarge         = idemproblem.CodeTooLarge
	CodeMediaType        = idemproblem.CodeMediaType
	CodeMisdirected      = idemproblem.CodeMisdirected
	CodeUnprocessable    = idemproblem.CodeUnprocessable
	CodeTooManyRequests  = idemproblem.CodeTooManyRequests
	CodeInternal         = idemproblem.CodeInternal
	CodeNotImplemented   = idemproblem.CodeNotImplemented
	CodeUnavailable      = idemproblem.CodeUnavailable

	ReasonKeyRequired     = idemproblem.ReasonKeyRequired
	ReasonKeyMalformed    = idemproblem.ReasonKeyMalformed
	ReasonConflict        = idemproblem.ReasonConflict
	ReasonInProgress      = idemproblem.ReasonInProgress
	ReasonSchemaChanged   = idemproblem.ReasonSchemaChanged
	ReasonExpired         = idemproblem.ReasonExpired
	ReasonLeaseLost       = idemproblem.ReasonLeaseLost
	ReasonOutcomeUnknown  = idemproblem.ReasonOutcomeUnknown
	ReasonWrongRegion     = idemproblem.ReasonWrongRegion
	ReasonBodyTooLarge    = idemproblem.ReasonBodyTooLarge
	ReasonBodyUnreadable  = idemproblem.ReasonBodyUnreadable
	ReasonInvalidJSON     = idemproblem.ReasonInvalidJSON
	ReasonInvalidRequest  = idemproblem.ReasonInvalidRequest
	ReasonMediaType       = idemproblem.ReasonMediaType
	ReasonUnauthenticated = idemproblem.ReasonUnauthenticated
	ReasonForbidden       = idemproblem.ReasonForbidden
	ReasonNoOperation     = idemproblem.ReasonNoOperation
	ReasonMethod          = idemproblem.ReasonMethod
	ReasonInternal        = idemproblem.ReasonInternal
	ReasonNotImplemented  = idemproblem.ReasonNotImplemented
	ReasonDatabaseDown    = idemproblem.ReasonDatabaseDown
)

// Nullable is idemtype.Nullable.
//
// Deprecated: use idemtype.Nullable (runtime/idemtype).
type Nullable[T any] = idemtype.Nullable[T]

// NewNullable is idemtype.NewNullable.
//
// Deprecated: use idemtype.NewNullable (runtime/idemtype).
func NewNullable[T any](v T) Nullable[T] { return idemtype.NewNullable(v) }

// Null is idemtype.Null.
//
// Deprecated: use idemtype.Null (runtime/idemtype).
func Null[T any]() Nullable[T] { return idemtype.Null[T]() }

// OrEmpty is idemtype.OrEmpty.
//
// Deprecated: use idemtype.OrEmpty (runtime/idemtype).
type OrEmpty[T any] = idemtype.OrEmpty[T]

// NewOrEmpty is idemtype.NewOrEmpty.
//
// Deprecated: use idemtype.NewOrEmpty (runtime/idemtype).
func NewOrEmpty[T any](v T) OrEmpty[T] { return idemtype.NewOrEmpty(v) }

// Empty is idemtype.Empty.
//
// Deprecated: use idemtype.Empty (runtime/idemtype).
func Empty[T any]() OrEmpty[T] { return idemtype.Empty[T]() }

// Date is idemtype.Date.
//
// Deprecated: use idemtype.Date (runtime/idemtype).
type Date = idemtype.Date

// ParseDate is idemtype.ParseDate.
//
// Deprecated: use idemtype.ParseDate (runtime/idemtype).
func ParseDate(s string) (Date, error) { return idemtype.ParseDate(s) }

// DateOf is idemtype.DateOf.
//
// Deprecated: use idemtype.DateOf (runtime/idemtype).
func DateOf(t time.Time) Date { return idemtype.DateOf(t) }

// File is idemtype.File.
//
// Deprecated: use idemtype.File (runtime/idemtype).
type File = idemtype.File

// MigrationsTable is schema.MigrationsTable.
//
// Deprecated: use schema.MigrationsTable (runtime/idem/schema).
const MigrationsTable = queries.MigrationsTable

// Migrate is schema.Migrate.
//
// Deprecated: use schema.Migrate (runtime/idem/schema).
func Migrate(ctx context.Context, db DB) error {
	return migrations.Apply(ctx, db, queries.Migrations, MigrationsTable)
}

// MigrateFS is schema.MigrateFS.
//
// Deprecated: use schema.MigrateFS (runtime/idem/schema).
func MigrateFS(ctx context.Context, db DB, fsys fs.FS, table string) error {
	return migrations.Apply(ctx, db, fsys, table)
}

// MigrationVersions is schema.MigrationVersions.
//
// Deprecated: use schema.MigrationVersions (runtime/idem/schema).
func MigrationVersions(fsys fs.FS) ([]string, error) { return migrations.List(fsys) }

// Versions is schema.Versions.
//
// Deprecated: use schema.Versions (runtime/idem/schema).
func Versions() []string { return migrations.Versions() }

// SweeperConfig is admin.SweeperConfig but for its NewKey field, which
// NewSweeper sets.
//
// Deprecated: use admin.SweeperConfig (runtime/idem/admin).
type SweeperConfig = sweep.Config[Key]

// Sweeper is admin.Sweeper.
//
// Deprecated: use admin.Sweeper (runtime/idem/admin).
type Sweeper = sweep.Sweeper[Key]

// SweepResult is admin.SweepResult.
//
// Deprecated: use admin.SweepResult (runtime/idem/admin).
type SweepResult = sweep.Result

// LiveRecords is admin.LiveRecords.
//
// Deprecated: use admin.LiveRecords (runtime/idem/admin).
type LiveRecords = sweep.Live

// AbandonedClaim is admin.AbandonedClaim.
//
// Deprecated: use admin.AbandonedClaim (runtime/idem/admin).
type AbandonedClaim = sweep.Claim[Key]

// NewSweeper is admin.NewSweeper.
//
// Deprecated: use admin.NewSweeper (runtime/idem/admin).
func NewSweeper(db DB, cfg SweeperConfig) *Sweeper {
	cfg.NewKey = func(tenant, operation, key string, created time.Time) Key {
		return Key{Tenant: tenant, Operation: operation, Value: key, Since: created}
	}
	return sweep.New(db, cfg)
}
