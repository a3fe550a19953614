-- idemgen runtime: idempotency records, v3 (issue 25). A record that costs
-- little to insert: one narrow primary key and no other index.
--
-- * The primary key is `id`, 16 bytes: the first half of
--   SHA-256(tenant NUL operation NUL key), as idem_record_id computes it
--   (and the engine, which sends it). It replaces a primary key on three
--   text columns. The readable tenant, operation and key stay in the row
--   for operators and for one more check: every statement that acts on a
--   row it did not claim under a fencing token compares them, so two keys
--   whose ids collide are refused, never merged (docs/design.md).
-- * No index on expires_at: the sweeper walks the table in physical order
--   instead of keeping a B-tree up to date on every insert.
-- * id has no default: an insert by a v2 engine (which knows no id) fails,
--   so that a process still running the old code during a rolling upgrade
--   errs instead of recording a key a second time. (No CHECK ties id to
--   the triple: it would run the hash again on every insert and update;
--   the engine and idem_record_id are held to each other by tests.)
--
-- No downtime: the v2 table is renamed, not rewritten or copied, so this
-- migration takes milliseconds whatever the table holds. Its records
-- stay readable: the engine looks a key up in idem_records_v2 before it
-- decides about it and moves the record over (ImportLegacy), and the
-- sweeper moves the rest and drops idem_records_v2 once it is empty. A
-- table with no records is dropped here at once.
ALTER TABLE idem_records RENAME TO idem_records_v2;
ALTER INDEX idem_records_pkey RENAME TO idem_records_v2_pkey;
ALTER INDEX IF EXISTS idem_records_expires_at_idx RENAME TO idem_records_v2_expires_at_idx;

-- The record id of (tenant, operation, key). Immutable: convert_to names
-- its encoding, so the bytes hashed are UTF-8 whatever the database's.
CREATE FUNCTION idem_record_id(tenant text, operation text, idempotency_key text) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT encode(substring(sha256(convert_to(tenant, 'UTF8') || '\x00'::bytea || convert_to(operation, 'UTF8')
        || '\x00'::bytea || convert_to(idempotency_key, 'UTF8')) FROM 1 FOR 16), 'hex')::uuid
$$;

CREATE TABLE idem_records (
    id               uuid        NOT NULL,
    tenant           text        NOT NULL,
    operation        text        NOT NULL,
    idempotency_key  text        NOT NULL,
    state            text        NOT NULL,
    -- SHA-256 of method, route, path parameters, query and canonical body.
    fingerprint      bytea       NOT NULL,
    -- Version of the operation's response schemas when the response was stored.
    schema_version   text        NOT NULL,
    response_status  integer,
    -- Allowlisted response headers, as a JSON object of name -> [values]
    -- (NULL when sealed: the body column then holds both).
    response_headers jsonb,
    response_body    bytea,
    -- Executions started for this key (takeovers and retries included).
    attempts         integer     NOT NULL DEFAULT 1,
    -- Fencing token: bumped by every claim; an outcome is stored only by the
    -- holder of the current token.
    fence            bigint      NOT NULL DEFAULT 1,
    -- Lease mode: until when an IN_PROGRESS claim is honoured.
    lease_expires_at timestamptz,
    -- The current claim took over a stale IN_PROGRESS or UNKNOWN claim.
    taken_over       boolean     NOT NULL DEFAULT false,
    -- Recovery point of a multi-step lease-mode handler.
    recovery_point   text,
    recovery_data    bytea,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    expires_at       timestamptz NOT NULL,
    CONSTRAINT idem_records_pkey PRIMARY KEY (id),
    CONSTRAINT idem_records_state_check CHECK (state IN (
        'IN_PROGRESS', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_REPLAYABLE', 'EXPIRED', 'UNKNOWN')),
    CONSTRAINT idem_records_fingerprint_check CHECK (octet_length(fingerprint) = 32),
    CONSTRAINT idem_records_key_check CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    CONSTRAINT idem_records_response_check CHECK (
        state NOT IN ('COMPLETED', 'FAILED_REPLAYABLE')
        OR (response_status IS NOT NULL AND response_body IS NOT NULL AND completed_at IS NOT NULL))
) WITH (fillfactor = 90);

-- Nothing to move: no idem_records_v2 for the engine to look into.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM idem_records_v2) THEN
        DROP TABLE idem_records_v2;
    END IF;
END
$$;
