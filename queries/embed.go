// Package queries holds idemgen's SQL: the schema as plain migrations, usable
// as they are by goose, atlas or golang-migrate (NNNN_name.up.sql and
// .down.sql), and the queries sqlc compiles into the runtime's internal
// packages. The runtime applies the migrations itself with schema.Migrate.
package queries

import "embed"

// Migrations holds migrations/*.up.sql and *.down.sql, applied in file name order.
//
//go:embed migrations/*.sql
var Migrations embed.FS
