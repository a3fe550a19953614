package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// The upgrade from the v2 record table. Migration 0005 renames it to
// idem_records_v2 instead of copying it (no downtime), so until the
// sweeper has moved its records over and dropped it, a key may have its
// record there: before deciding about a key, the engine moves the key's
// record over (ImportLegacy), one statement. Nobody writes the v2 table
// any more, so the move is safe to repeat and to race with the sweeper's.
// Once the table is gone (undefined_table), the engine stops asking.

// Whether the v2 table exists, as the engine last learnt it.
const (
	legacyUnknown int32 = iota
	legacyPresent
	legacyGone
)

// errIDCollision refuses a key whose record id another key's record has.
var errIDCollision = errors.New("idem: another key's record has this key's record id (a hash collision); the key cannot be used")

// importLegacy moves rq's record from the v2 table, while there is one.
func (e *Engine) importLegacy(ctx context.Context, rq *request, st session) error {
	state := e.legacy.Load()
	if state == legacyGone {
		return nil
	}
	err := st.do(ctx, func(q statements) error {
		if state == legacyUnknown {
			present, err := q.legacyTable(ctx)
			if err != nil {
				return err
			}
			if !present {
				e.legacy.Store(legacyGone)
				return nil
			}
			e.legacy.CompareAndSwap(legacyUnknown, legacyPresent)
		}
		return q.importLegacy(ctx, rq.ref)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: the sweeper dropped it
		e.legacy.Store(legacyGone)
		return nil
	}
	if err != nil {
		return fmt.Errorf("idem: read record: %w", err)
	}
	return nil
}
