-- idemgen runtime: who resolved which record by hand, and why.
--
-- `idemgen records resolve` settles an UNKNOWN record or an abandoned claim
-- (completed with a response, retryable, or expired) and writes one row
-- here in the same transaction. Rows outlive the records they name: they
-- are the audit trail of manual decisions, deleted by nobody but you.
CREATE TABLE idem_resolutions (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant          text        NOT NULL,
    operation       text        NOT NULL,
    idempotency_key text        NOT NULL,
    from_state      text        NOT NULL,
    to_state        text        NOT NULL,
    -- The fencing token the resolution set: a holder of an older one can no
    -- longer store an outcome.
    fence           bigint      NOT NULL,
    response_status integer,
    -- A live lease was overridden (--force).
    forced          boolean     NOT NULL DEFAULT false,
    resolved_by     text        NOT NULL,
    reason          text        NOT NULL,
    resolved_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT idem_resolutions_who_check CHECK (resolved_by <> '' AND reason <> '')
);

CREATE INDEX idem_resolutions_record_idx ON idem_resolutions (tenant, operation, idempotency_key);
