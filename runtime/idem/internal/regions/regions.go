// Package regions holds what the engine (idem.Region, idem.New) and the
// region setup (package schema: SetupRegion, SubscribeRegion) must agree
// on: a region's name rules, the schema its records live in, and the check
// that a database's connections resolve to that schema.
package regions

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// maxNameBytes is the longest region name.
const maxNameBytes = 30

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Schema is the schema that holds the records of region name, in its own
// database and, as a read-only replica, in every peer's.
func Schema(name string) string { return "idem_" + name }

// Validate checks a region's name and its peers' (as idem.Region.Name and
// idem.Region.Peers, named so in the errors).
func Validate(local string, peers []string) error {
	seen := map[string]bool{}
	for i, n := range append([]string{local}, peers...) {
		what := "Region.Name"
		if i > 0 {
			what = fmt.Sprintf("Region.Peers[%d]", i-1)
		}
		if !namePattern.MatchString(n) || len(n) > maxNameBytes {
			return fmt.Errorf("idem: %s %q: want a lower-case letter, then lower-case letters, digits or _ (at most %d bytes)", what, n, maxNameBytes)
		}
		if seen[n] {
			return fmt.Errorf("idem: %s %q named twice", what, n)
		}
		seen[n] = true
	}
	if len(peers) == 0 {
		return fmt.Errorf("idem: region %q has no peers", local)
	}
	return nil
}

// Querier is what VerifySearchPath needs of a database.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// VerifySearchPath checks that db's unqualified table names resolve to
// region name's schema, where the engine's statements must write.
func VerifySearchPath(ctx context.Context, db Querier, name string) error {
	var cur *string
	if err := db.QueryRow(ctx, "SELECT current_schema()").Scan(&cur); err != nil {
		return fmt.Errorf("idem: region %s: read the search path: %w", name, err)
	}
	if cur == nil || *cur != Schema(name) {
		got := "no schema"
		if cur != nil {
			got = "schema " + *cur
		}
		return fmt.Errorf("idem: region %s: the database's tables resolve to %s, want %s: open its connections with search_path=%s,public (and run schema.SetupRegion)",
			name, got, Schema(name), Schema(name))
	}
	return nil
}
