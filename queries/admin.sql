-- Queries of the engine's admin API (runtime/idem/admin), which `idemgen
-- records`, the on-call CLI, calls. Compiled by sqlc with records.sql into
-- runtime/idem/internal/store; `make generate` after editing.
-- They read idem_records as the engine writes it and change a record only
-- by a fenced UPDATE, like the engine.

-- name: FindRecords :many
-- The records a key names (one per operation, unless -operation is given).
-- The stored body's size, not the body. With the operation, one primary-key
-- lookup (the record's id); without it, a walk of the table: only the id
-- is indexed.
SELECT tenant, operation, idempotency_key, state, schema_version, attempts, fence,
    lease_expires_at, taken_over, recovery_point, created_at, updated_at, completed_at, expires_at,
    response_status,
    coalesce(octet_length(response_body), 0)::bigint AS body_bytes,
    coalesce(octet_length(recovery_data), 0)::bigint AS recovery_bytes,
    coalesce(lease_expires_at > now(), false)::boolean AS lease_live,
    (expires_at <= now())::boolean AS expired,
    now()::timestamptz AS db_now
FROM idem_records
WHERE (sqlc.narg(operation)::text IS NULL AND tenant = @tenant AND idempotency_key = @idempotency_key)
   OR id = idem_record_id(@tenant, sqlc.narg(operation)::text, @idempotency_key)
ORDER BY operation;

-- name: GetStored :one
-- One record's stored response and recovery data, for --show-body and for
-- resolve and reseal, which rewrite them.
SELECT state, fence, updated_at, response_status, response_headers, response_body, recovery_data
FROM idem_records
WHERE id = idem_record_id(@tenant, @operation, @idempotency_key);

-- name: ListRecords :many
-- Records by filter, what needs a person first: UNKNOWN, then claims whose
-- lease lapsed (abandoned), then live claims, then the rest, oldest first.
-- key_hash is idem.Key.Hash (the first 8 bytes of the record's id, in hex),
-- so a hash from a log line finds its record: a range of the primary key.
-- Otherwise walks the table, bounded by LIMIT, not by an index.
SELECT tenant, operation, idempotency_key, state, attempts, fence, lease_expires_at,
    created_at, updated_at, expires_at, response_status,
    coalesce(octet_length(response_body), 0)::bigint AS body_bytes,
    coalesce(lease_expires_at > now(), false)::boolean AS lease_live,
    substr(replace(id::text, '-', ''), 1, 16)::text AS key_hash
FROM idem_records
WHERE (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(operation)::text IS NULL OR operation = sqlc.narg(operation))
  AND (sqlc.narg(tenant)::text IS NULL OR tenant = sqlc.narg(tenant))
  AND (sqlc.narg(older_than_ms)::bigint IS NULL
       OR created_at <= now() - sqlc.narg(older_than_ms)::bigint * interval '1 millisecond')
  AND (sqlc.narg(key_hash)::text IS NULL
       OR (id >= rpad(sqlc.narg(key_hash)::text, 32, '0')::uuid AND id <= rpad(sqlc.narg(key_hash)::text, 32, 'f')::uuid))
ORDER BY CASE
        WHEN state = 'UNKNOWN' THEN 0
        WHEN state = 'IN_PROGRESS' AND coalesce(lease_expires_at <= now(), true) THEN 1
        WHEN state = 'IN_PROGRESS' THEN 2
        ELSE 3 END,
    created_at
LIMIT @row_limit;

-- name: CountByStateAndOperation :many
SELECT operation, state, count(*)::bigint AS records,
    coalesce(sum(octet_length(response_body)), 0)::bigint AS body_bytes
FROM idem_records
GROUP BY operation, state
ORDER BY operation, state;

-- name: TableStats :one
-- The oldest live claim (IN_PROGRESS or UNKNOWN), and the table's size on
-- disk with its indexes and TOAST.
SELECT
    (SELECT min(created_at) FROM idem_records WHERE state IN ('IN_PROGRESS', 'UNKNOWN'))::timestamptz AS oldest_live,
    pg_total_relation_size('idem_records')::bigint AS total_bytes,
    now()::timestamptz AS db_now;

-- name: Resolve :one
-- Settles a record by hand: COMPLETED or FAILED_REPLAYABLE with a response,
-- FAILED_RETRYABLE, or EXPIRED (due now, so the sweeper deletes it after
-- its grace). Fenced: only the state and fence the operator saw, and the
-- fence moves on, so a claim holder still running can no longer store its
-- outcome. No row: the record changed meanwhile.
UPDATE idem_records SET
    state            = @to_state,
    response_status  = sqlc.narg(response_status),
    response_headers = sqlc.narg(response_headers),
    response_body    = sqlc.narg(response_body),
    completed_at     = CASE WHEN @to_state IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN now() END,
    expires_at       = CASE WHEN @to_state = 'EXPIRED' THEN least(expires_at, now()) ELSE expires_at END,
    lease_expires_at = NULL,
    taken_over       = false,
    fence            = fence + 1,
    updated_at       = now()
WHERE id = idem_record_id(@tenant, @operation, @idempotency_key)
  AND state = @from_state AND fence = @fence
RETURNING fence;

-- name: RecordResolution :exec
INSERT INTO idem_resolutions (
    tenant, operation, idempotency_key, from_state, to_state, fence, response_status, forced, resolved_by, reason)
VALUES (
    @tenant, @operation, @idempotency_key, @from_state, @to_state, @fence, sqlc.narg(response_status),
    @forced, @resolved_by, @reason);

-- name: Resolutions :many
SELECT from_state, to_state, fence, response_status, forced, resolved_by, reason, resolved_at
FROM idem_resolutions
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
ORDER BY id;

-- name: SealedPage :many
-- Reseal walks every record holding a stored response or recovery data, in
-- primary-key order, a page at a time.
SELECT id, tenant, operation, idempotency_key, state, fence, updated_at,
    response_status, response_headers, response_body, recovery_data
FROM idem_records
WHERE (sqlc.narg(after_id)::uuid IS NULL OR id > sqlc.narg(after_id)::uuid)
  AND (response_body IS NOT NULL OR recovery_data IS NOT NULL)
ORDER BY id
LIMIT @row_limit;

-- name: Reseal :execrows
-- Rewrites one record's sealed values, unless it changed since it was read
-- (a new outcome, a recovery point, a takeover).
UPDATE idem_records SET
    response_headers = sqlc.narg(response_headers),
    response_body    = sqlc.narg(response_body),
    recovery_data    = sqlc.narg(recovery_data)
WHERE id = @id
  AND state = @state AND fence = @fence AND updated_at = @updated_at;
