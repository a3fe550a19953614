// Package migrations tests the files `idemgen migrations` writes with the
// migration tools they are for — goose, golang-migrate and atlas, as
// libraries — applied to a real PostgreSQL (DATABASE_URL): up, then
// idem.New finds the schema complete and schema.Migrate has nothing left to
// do, then (goose, golang-migrate) down again to nothing. It is a module of
// its own so that the runtime's go.mod does not carry the three tools.
package migrations
