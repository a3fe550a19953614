// Package schema sets a database up for the idempotency engine (package
// idem): it applies idemgen's migrations, and a service's own, and
// prepares the databases of a service that runs in several regions. These
// are jobs for start-up or for an operator, not for a request: the engine
// itself only checks, in idem.New, that the migrations it needs were
// applied (idem.ErrSchemaMissing names what is missing).
//
// # Migrations
//
//	if err := schema.Migrate(ctx, pool); err != nil { // idemgen's tables, before idem.New
//		return err
//	}
//	if err := schema.MigrateFS(ctx, pool, migrations, "orders_migrations"); err != nil { // the service's own
//		return err
//	}
//
// Migrate applies idemgen's own migrations and records them in
// MigrationsTable; Versions lists them. MigrateFS applies a service's
// NNNN_name.up.sql files the same way, in a table of their own, and
// refuses any other file in the set (MigrationVersions says which).
// Every pending migration applies in one transaction, so many processes
// may migrate at once. A service whose migration tool owns the schema
// applies the same SQL with it instead: `idemgen migrations -format
// goose|migrate|atlas|plain` writes it, recorded where idem.New looks
// (docs/migrations.md).
//
// # Regions
//
// A service in several regions (idem.Config.Region, docs/scaling.md)
// gives each region a database of its own, whose connections put the
// region's schema (RegionSchema) first on their search path. SetupRegion
// prepares it: the schemas, idemgen's migrations, a replica table per
// peer, the conflict table and its triggers, and the publication of the
// region's records; SubscribeRegion subscribes it to a peer's records
// (RegionSubscription names the subscription). Both may run again on
// every start.
package schema
