package idem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idem/internal/migrations"
)

// ErrSchemaMissing is wrapped by the error New returns when the database
// lacks idemgen's tables or some of its migrations.
var ErrSchemaMissing = errors.New("idem: the database lacks idemgen's schema")

// schemaCheckTimeout bounds the queries New sends to check the schema.
const schemaCheckTimeout = 5 * time.Second

// checkSchema tells a database that lacks idemgen's schema, or some of its
// migrations, from one that has them, so that a service which forgot
// schema.Migrate fails at start-up with what to do, not on its first
// request. A database it cannot ask (down, no permission to read the
// catalog) is logged and let through: the requests will say more.
func (e *Engine) checkSchema() error {
	if e.db == nil {
		return nil // Config.Shard chooses every database, on first use
	}
	ctx, cancel := context.WithTimeout(context.Background(), schemaCheckTimeout)
	defer cancel()
	var hasTable, hasRecords bool
	err := e.db.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL, to_regclass('idem_records') IS NOT NULL", migrations.Table).
		Scan(&hasTable, &hasRecords)
	if err != nil {
		e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
		return nil
	}
	const how = "call schema.Migrate(ctx, db) (package runtime/idem/schema) at start-up before idem.New, or apply the files of `idemgen migrations` with your migration tool (docs/migrations.md)"
	if !hasTable && !hasRecords {
		return fmt.Errorf("%w: no idem_records table in the search_path: %s", ErrSchemaMissing, how)
	}
	if !hasTable {
		// Applied by hand or by an older export that did not record
		// itself: nothing to compare.
		return nil
	}
	rows, err := e.db.Query(ctx, "SELECT version FROM "+migrations.Table)
	if err != nil {
		e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
		return nil
	}
	applied := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
			return nil
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
		return nil
	}
	var missing []string
	versions := migrations.Versions()
	for _, v := range versions {
		if !applied[v] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: migration(s) %s not applied (%s lists %d of %d): %s", ErrSchemaMissing,
			strings.Join(missing, ", "), migrations.Table, len(versions)-len(missing), len(versions), how)
	}
	return nil
}
