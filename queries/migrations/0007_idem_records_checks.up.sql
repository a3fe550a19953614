-- idemgen runtime: idem_records without CHECK constraints (issue 40).
--
-- PostgreSQL prepares a table's CHECK expressions again for every INSERT
-- and UPDATE statement (it reads them from the catalog's text form and
-- plans them per statement, not per session). On this table, written by
-- every request, its four checks took more time than the write itself:
-- an atomic request's InsertOutcome ran 13 µs without them against 36 µs
-- with them, lease mode's Claim 25 against 50 µs (pg_stat_statements,
-- durable commits; docs/benchmarks-history.md, "The records' CHECK
-- constraints").
--
-- What they guarded is the engine's to keep, and held by its tests: a
-- state is one of idem.State's values, the fingerprint is a SHA-256, the
-- key has 1 to 255 characters (idem.ParseKey), and a COMPLETED or
-- FAILED_REPLAYABLE record has its response. runtime/pgtest checks every
-- test's records for all four when the test ends (docs/design.md, "The
-- records table").
--
-- Instant: a catalog change, no scan and no rewrite of the table.
ALTER TABLE idem_records
    DROP CONSTRAINT IF EXISTS idem_records_state_check,
    DROP CONSTRAINT IF EXISTS idem_records_fingerprint_check,
    DROP CONSTRAINT IF EXISTS idem_records_key_check,
    DROP CONSTRAINT IF EXISTS idem_records_response_check;
