-- Back to v2: records written since 0005 are dropped with the v3 table
-- (as every down migration drops what its up made). The v2 table comes
-- back as it was left: renamed if it still exists, else created empty.
DROP TABLE IF EXISTS idem_records;
DROP FUNCTION IF EXISTS idem_record_id(text, text, text);
DO $$
BEGIN
    IF to_regclass('idem_records_v2') IS NOT NULL THEN
        ALTER TABLE idem_records_v2 RENAME TO idem_records;
        ALTER INDEX idem_records_v2_pkey RENAME TO idem_records_pkey;
        ALTER INDEX IF EXISTS idem_records_v2_expires_at_idx RENAME TO idem_records_expires_at_idx;
    ELSE
        CREATE TABLE idem_records (
            tenant           text        NOT NULL,
            operation        text        NOT NULL,
            idempotency_key  text        NOT NULL,
            state            text        NOT NULL,
            fingerprint      bytea       NOT NULL,
            schema_version   text        NOT NULL,
            response_status  integer,
            response_headers jsonb,
            response_body    bytea,
            attempts         integer     NOT NULL DEFAULT 1,
            fence            bigint      NOT NULL DEFAULT 1,
            lease_expires_at timestamptz,
            taken_over       boolean     NOT NULL DEFAULT false,
            recovery_point   text,
            recovery_data    bytea,
            created_at       timestamptz NOT NULL DEFAULT now(),
            updated_at       timestamptz NOT NULL DEFAULT now(),
            completed_at     timestamptz,
            expires_at       timestamptz NOT NULL,
            PRIMARY KEY (tenant, operation, idempotency_key),
            CONSTRAINT idem_records_state_check CHECK (state IN (
                'IN_PROGRESS', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_REPLAYABLE', 'EXPIRED', 'UNKNOWN')),
            CONSTRAINT idem_records_fingerprint_check CHECK (octet_length(fingerprint) = 32),
            CONSTRAINT idem_records_key_check CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
            CONSTRAINT idem_records_response_check CHECK (
                state NOT IN ('COMPLETED', 'FAILED_REPLAYABLE')
                OR (response_status IS NOT NULL AND response_body IS NOT NULL AND completed_at IS NOT NULL))
        ) WITH (fillfactor = 90);
        CREATE INDEX idem_records_expires_at_idx ON idem_records (expires_at);
    END IF;
END
$$;
