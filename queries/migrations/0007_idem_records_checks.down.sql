-- The CHECK constraints of 0005 again. Adding them reads the whole table
-- (under a lock that blocks writes) to validate the rows it holds.
ALTER TABLE idem_records
    ADD CONSTRAINT idem_records_state_check CHECK (state IN (
        'IN_PROGRESS', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_REPLAYABLE', 'EXPIRED', 'UNKNOWN')),
    ADD CONSTRAINT idem_records_fingerprint_check CHECK (octet_length(fingerprint) = 32),
    ADD CONSTRAINT idem_records_key_check CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    ADD CONSTRAINT idem_records_response_check CHECK (
        state NOT IN ('COMPLETED', 'FAILED_REPLAYABLE')
        OR (response_status IS NOT NULL AND response_body IS NOT NULL AND completed_at IS NOT NULL));
