package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
)

// TestNewChecksSchema: idem.New on a database without idemgen's tables,
// or with a migration missing, is an error saying to run schema.Migrate,
// instead of a server that starts and fails its first request.
func TestNewChecksSchema(t *testing.T) {
	t.Parallel()
	pool := emptySchema(t)
	ctx := context.Background()
	_, err := idem.New(pool, idem.Config{})
	if !errors.Is(err, idem.ErrSchemaMissing) || !strings.Contains(err.Error(), "no idem_records table") || !strings.Contains(err.Error(), "schema.Migrate(ctx, db)") {
		t.Fatalf("New on an empty schema: %v", err)
	}
	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := idem.New(pool, idem.Config{}); err != nil {
		t.Fatalf("New after Migrate: %v", err)
	}
	vs := schema.Versions()
	last := vs[len(vs)-1]
	if _, err := pool.Exec(ctx, "DELETE FROM idem_schema_migrations WHERE version = $1", last); err != nil {
		t.Fatal(err)
	}
	_, err = idem.New(pool, idem.Config{})
	if !errors.Is(err, idem.ErrSchemaMissing) || !strings.Contains(err.Error(), "migration(s) "+last+" not applied") {
		t.Fatalf("New with %s unrecorded: %v", last, err)
	}
}
