-- idemgen runtime: idempotency records, v2. Upgrades a table made by 0001 in
-- place: no column changes and no row rewrite; the expiry index is rebuilt,
-- which blocks writes to idem_records while it builds (seconds for millions
-- of rows).
--
-- * The expiry index now covers every record (it was partial on the final
--   states). Its predicate named `state`, so completing a lease claim
--   (IN_PROGRESS -> COMPLETED) could never be a heap-only (HOT) update and
--   added a second primary-key entry for the row; now a completion changes
--   no indexed column. The sweeper also finds abandoned lease claims past
--   their expiry through it.
-- * fillfactor 90 leaves room on each page for those in-place updates.
DROP INDEX IF EXISTS idem_records_expires_at_idx;
CREATE INDEX idem_records_expires_at_idx ON idem_records (expires_at);
ALTER TABLE idem_records SET (fillfactor = 90);
