ALTER TABLE idem_records RESET (fillfactor);
DROP INDEX IF EXISTS idem_records_expires_at_idx;
CREATE INDEX idem_records_expires_at_idx ON idem_records (expires_at)
    WHERE state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED');
