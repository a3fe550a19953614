-- idemgen runtime: idempotency records.
--
-- One row per (tenant, operation, idempotency key). Every check-and-set on it
-- is a single INSERT ... ON CONFLICT or a fenced UPDATE; nothing here relies
-- on advisory locks, xmax, xid8 or enum types, so the table also runs on
-- distributed PostgreSQL engines (tenant leads the key: a Citus distribution
-- column).
CREATE TABLE idem_records (
    tenant           text        NOT NULL,
    operation        text        NOT NULL,
    idempotency_key  text        NOT NULL,
    state            text        NOT NULL,
    -- SHA-256 of method, route, path parameters, query and canonical body.
    fingerprint      bytea       NOT NULL,
    -- Version of the operation's response schemas when the response was stored.
    schema_version   text        NOT NULL,
    response_status  integer,
    -- Allowlisted response headers, as a JSON object of name -> [values].
    response_headers jsonb,
    response_body    bytea,
    -- Executions started for this key (takeovers and retries included).
    attempts         integer     NOT NULL DEFAULT 1,
    -- Fencing token: bumped by every claim; an outcome is stored only by the
    -- holder of the current token.
    fence            bigint      NOT NULL DEFAULT 1,
    -- Lease mode: until when an IN_PROGRESS claim is honoured.
    lease_expires_at timestamptz,
    -- True when the current claim took over a stale IN_PROGRESS or UNKNOWN
    -- claim, whose external effects a recovery hook must check first.
    taken_over       boolean     NOT NULL DEFAULT false,
    -- Recovery point of a multi-step lease-mode handler.
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
);

-- The sweeper walks final records by expiry; live claims are not indexed.
CREATE INDEX idem_records_expires_at_idx ON idem_records (expires_at)
    WHERE state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED');
