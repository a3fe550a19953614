-- Queries of the idempotency engine (runtime/idem). Compiled by sqlc into
-- runtime/idem/internal/store; `make generate` after editing.
--
-- Every statement judges time by the database clock (now()); the engine
-- never compares a stored timestamp with its own clock.

-- name: GetRecord :one
-- Reads what a request needs to decide about an existing record: replay it,
-- refuse it (another payload, in flight, expired) or claim it. The stored
-- response comes back only when it is about to be replayed (same request,
-- final, not expired); a conflict or an in-flight answer never reads it.
-- A read, never followed by an INSERT decision: the writes below are the
-- only check-and-set.
SELECT state,
    (fingerprint = @fingerprint)::boolean AS same_request,
    schema_version,
    attempts,
    fence,
    created_at,
    completed_at,
    (expires_at <= now())::boolean AS expired,
    coalesce(lease_expires_at <= now(), false)::boolean AS lease_lapsed,
    -- Milliseconds left of a live lease, for Retry-After.
    coalesce(ceil(extract(epoch FROM lease_expires_at - now()) * 1000), 0)::bigint AS lease_left_ms,
    -- The stored response, or 0 / {} / empty when it is not to be replayed.
    coalesce(CASE WHEN fingerprint = @fingerprint AND state IN ('COMPLETED', 'FAILED_REPLAYABLE') AND expires_at > now()
        THEN response_status END, 0)::integer AS response_status,
    coalesce(CASE WHEN fingerprint = @fingerprint AND state IN ('COMPLETED', 'FAILED_REPLAYABLE') AND expires_at > now()
        THEN response_headers END, '{}')::jsonb AS response_headers,
    coalesce(CASE WHEN fingerprint = @fingerprint AND state IN ('COMPLETED', 'FAILED_REPLAYABLE') AND expires_at > now()
        THEN response_body END, '')::bytea AS response_body
FROM idem_records
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key;

-- name: InsertOutcome :exec
-- Atomic mode, a key with no record: the outcome is the record's one write,
-- inserted in the business transaction just before COMMIT. A concurrent
-- duplicate that got there first makes it fail with unique_violation
-- (23505), after waiting for that duplicate's transaction to end; the
-- COMMIT queued behind it is then skipped and the business writes roll back.
INSERT INTO idem_records (
    tenant, operation, idempotency_key, state, fingerprint, schema_version,
    response_status, response_headers, response_body, created_at, completed_at, expires_at)
VALUES (
    @tenant, @operation, @idempotency_key, @state, @fingerprint, @schema_version,
    @response_status, @response_headers, @response_body, @created_at, now(),
    now() + (@ttl_ms::bigint) * interval '1 millisecond');

-- name: ReplaceOutcome :one
-- Atomic mode, a key whose record may be run again (FAILED_RETRYABLE with
-- the same fingerprint, or expired when onExpired is execute): the outcome
-- replaces it in the business transaction. When the record is no longer
-- replaceable (a concurrent duplicate completed it) the statement fails with
-- division by zero (22012), so the COMMIT queued behind it is skipped.
WITH done AS (
    INSERT INTO idem_records AS r (
        tenant, operation, idempotency_key, state, fingerprint, schema_version,
        response_status, response_headers, response_body, created_at, completed_at, expires_at)
    VALUES (
        @tenant, @operation, @idempotency_key, @state, @fingerprint, @schema_version,
        @response_status, @response_headers, @response_body, @created_at, now(),
        now() + (@ttl_ms::bigint) * interval '1 millisecond')
    ON CONFLICT (tenant, operation, idempotency_key) DO UPDATE SET
        state            = EXCLUDED.state,
        fingerprint      = EXCLUDED.fingerprint,
        schema_version   = EXCLUDED.schema_version,
        response_status  = EXCLUDED.response_status,
        response_headers = EXCLUDED.response_headers,
        response_body    = EXCLUDED.response_body,
        completed_at     = now(),
        attempts         = r.attempts + 1,
        fence            = r.fence + 1,
        lease_expires_at = NULL,
        taken_over       = false,
        recovery_point   = NULL,
        recovery_data    = NULL,
        created_at       = CASE WHEN r.expires_at <= now() THEN EXCLUDED.created_at ELSE r.created_at END,
        expires_at       = CASE WHEN r.expires_at <= now() THEN EXCLUDED.expires_at ELSE r.expires_at END,
        updated_at       = now()
    WHERE (r.state = 'FAILED_RETRYABLE' AND r.fingerprint = EXCLUDED.fingerprint AND r.expires_at > now())
       OR (@take_expired::boolean
           AND r.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED')
           AND (r.expires_at <= now() OR r.state = 'EXPIRED'))
    RETURNING 1)
SELECT (1 / count(*))::integer AS stored FROM done;

-- name: Claim :one
-- Lease mode: claims a key in one statement, in a transaction of its own
-- that commits before the handler runs. Inserts a fresh IN_PROGRESS record,
-- or takes over an existing one when it may be re-run:
--   * FAILED_RETRYABLE with the same fingerprint (a handler error or 5xx);
--   * an expired final record when onExpired is execute (any fingerprint);
--   * an IN_PROGRESS claim whose lease lapsed, or an UNKNOWN one, with the
--     same fingerprint (taken_over tells the caller to recover).
-- Returns no row when the key is held otherwise; the caller then reads the
-- record to classify (replay, conflict, in flight, expired).
INSERT INTO idem_records AS r (
    tenant, operation, idempotency_key, state, fingerprint, schema_version,
    lease_expires_at, expires_at)
VALUES (
    @tenant, @operation, @idempotency_key, 'IN_PROGRESS', @fingerprint, @schema_version,
    now() + (@lease_ms::bigint) * interval '1 millisecond',
    now() + (@ttl_ms::bigint) * interval '1 millisecond')
ON CONFLICT (tenant, operation, idempotency_key) DO UPDATE SET
    state            = 'IN_PROGRESS',
    fingerprint      = EXCLUDED.fingerprint,
    schema_version   = EXCLUDED.schema_version,
    response_status  = NULL,
    response_headers = NULL,
    response_body    = NULL,
    completed_at     = NULL,
    attempts         = r.attempts + 1,
    fence            = r.fence + 1,
    lease_expires_at = EXCLUDED.lease_expires_at,
    taken_over       = r.state IN ('IN_PROGRESS', 'UNKNOWN'),
    recovery_point   = CASE WHEN r.expires_at <= now() THEN NULL ELSE r.recovery_point END,
    recovery_data    = CASE WHEN r.expires_at <= now() THEN NULL ELSE r.recovery_data END,
    created_at       = CASE WHEN r.expires_at <= now() THEN now() ELSE r.created_at END,
    expires_at       = CASE WHEN r.expires_at <= now() THEN EXCLUDED.expires_at ELSE r.expires_at END,
    updated_at       = now()
WHERE (r.state = 'FAILED_RETRYABLE' AND r.fingerprint = EXCLUDED.fingerprint AND r.expires_at > now())
   OR (@take_expired::boolean
       AND r.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED')
       AND (r.expires_at <= now() OR r.state = 'EXPIRED'))
   OR (r.fingerprint = EXCLUDED.fingerprint
       AND ((r.state = 'IN_PROGRESS' AND r.lease_expires_at <= now()) OR r.state = 'UNKNOWN'))
RETURNING fence, attempts, taken_over, recovery_point, recovery_data, created_at;

-- name: Complete :execrows
-- Lease mode: stores the outcome (COMPLETED or FAILED_REPLAYABLE) if the
-- caller still holds the claim. Zero rows: the claim was taken over (a zombie
-- holder) and the caller must roll its business transaction back. Changes no
-- indexed column, so the row can be updated in place (HOT).
UPDATE idem_records SET
    state            = @state,
    response_status  = @response_status,
    response_headers = @response_headers,
    response_body    = @response_body,
    completed_at     = now(),
    lease_expires_at = NULL,
    taken_over       = false,
    updated_at       = now()
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND fence = @fence AND state = 'IN_PROGRESS';

-- name: CompleteOrAbort :one
-- Complete for a batch that sends COMMIT right behind it: a claim that no
-- longer holds (zero rows) is an error, division by zero (SQLSTATE 22012),
-- so PostgreSQL skips the COMMIT and the business writes never commit.
WITH done AS (
    UPDATE idem_records SET
        state            = @state,
        response_status  = @response_status,
        response_headers = @response_headers,
        response_body    = @response_body,
        completed_at     = now(),
        lease_expires_at = NULL,
        taken_over       = false,
        updated_at       = now()
    WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
      AND fence = @fence AND state = 'IN_PROGRESS'
    RETURNING 1)
SELECT (1 / count(*))::integer AS stored FROM done;

-- name: FailRetryable :execrows
-- Lease mode: the handler failed and its writes were rolled back; a retry
-- with the same payload may run again.
UPDATE idem_records SET
    state = 'FAILED_RETRYABLE', lease_expires_at = NULL, taken_over = false, updated_at = now()
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND fence = @fence AND state = 'IN_PROGRESS';

-- name: RecordRetryable :execrows
-- Atomic mode: the business transaction rolled back; remember the key as
-- FAILED_RETRYABLE so it stays bound to its payload. Never overwrites a
-- record another request has since completed: zero rows then, and the
-- caller reads what that request stored.
INSERT INTO idem_records AS r (
    tenant, operation, idempotency_key, state, fingerprint, schema_version, expires_at)
VALUES (
    @tenant, @operation, @idempotency_key, 'FAILED_RETRYABLE', @fingerprint, @schema_version,
    now() + (@ttl_ms::bigint) * interval '1 millisecond')
ON CONFLICT (tenant, operation, idempotency_key) DO UPDATE SET
    attempts = r.attempts + 1, updated_at = now()
WHERE r.state = 'FAILED_RETRYABLE' AND r.fingerprint = EXCLUDED.fingerprint;

-- name: Release :execrows
-- The outcome is not kept (400, 401, 403, 429, ...): free the key so a
-- corrected request runs. Lease mode passes its fence; atomic mode, whose
-- write rolled back with the transaction, drops a FAILED_RETRYABLE record of
-- the same payload (fence 0 matches any).
DELETE FROM idem_records
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND ((@fence::bigint > 0 AND fence = @fence::bigint AND state = 'IN_PROGRESS')
    OR (@fence::bigint = 0 AND state = 'FAILED_RETRYABLE' AND fingerprint = @fingerprint));

-- name: MarkUnknown :execrows
-- Lease mode: a recovery hook could not tell whether a taken-over claim's
-- external effect happened. The next retry takes the claim over again.
UPDATE idem_records SET
    state = 'UNKNOWN', lease_expires_at = NULL, updated_at = now()
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND fence = @fence AND state = 'IN_PROGRESS';

-- name: SaveRecoveryPoint :execrows
-- Lease mode: records how far a multi-step handler got and renews its lease,
-- committed at once (outside the business transaction).
UPDATE idem_records SET
    recovery_point   = @recovery_point,
    recovery_data    = @recovery_data,
    lease_expires_at = now() + (@lease_ms::bigint) * interval '1 millisecond',
    updated_at       = now()
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND fence = @fence AND state = 'IN_PROGRESS';

-- name: RenewLeases :many
-- Lease mode: renews every live claim of one engine in one statement (the
-- engine's renewer, on a connection of its own). A claim that is not
-- returned no longer holds: another request took it over.
UPDATE idem_records AS r SET
    lease_expires_at = now() + v.lease_ms * interval '1 millisecond',
    updated_at       = now()
FROM (SELECT unnest(@tenants::text[]) AS tenant, unnest(@operations::text[]) AS operation,
             unnest(@idempotency_keys::text[]) AS idempotency_key, unnest(@fences::bigint[]) AS fence,
             unnest(@lease_ms::bigint[]) AS lease_ms) AS v
WHERE r.tenant = v.tenant AND r.operation = v.operation AND r.idempotency_key = v.idempotency_key
  AND r.fence = v.fence AND r.state = 'IN_PROGRESS'
RETURNING r.tenant, r.operation, r.idempotency_key, r.fence;

-- name: ExpireRecords :one
-- Sweeper, phase one: final records past their expiry become EXPIRED
-- tombstones (response dropped, fingerprint kept, so onExpired=reject still
-- recognises the key). Bounded batch; IN_PROGRESS and UNKNOWN are never touched.
-- The tombstones keep their place in the expiry index, ahead of the records
-- still to expire, so a batch that started at the beginning of the index
-- would walk over every tombstone made before it (a pass over a million
-- records: hours). Within a pass the sweeper starts each batch at the last
-- expiry of the one before (@after, returned as last_expiry).
WITH expired AS (
    UPDATE idem_records SET
        state = 'EXPIRED', response_status = NULL, response_headers = NULL, response_body = NULL,
        recovery_point = NULL, recovery_data = NULL, updated_at = now()
    WHERE (tenant, operation, idempotency_key) IN (
        SELECT s.tenant, s.operation, s.idempotency_key FROM idem_records s
        WHERE s.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE')
          AND s.expires_at <= now() AND s.expires_at >= @after::timestamptz
        ORDER BY s.expires_at
        LIMIT @batch_size
        FOR UPDATE SKIP LOCKED)
    RETURNING expires_at
)
SELECT count(*)::bigint AS expired, coalesce(max(expires_at), @after::timestamptz)::timestamptz AS last_expiry
FROM expired;

-- name: DeleteExpired :one
-- Sweeper, phase two: tombstones older than the grace period are deleted,
-- each batch starting at the last expiry of the one before (as above: the
-- index entries of deleted rows stay until vacuum).
WITH deleted AS (
    DELETE FROM idem_records
    WHERE (tenant, operation, idempotency_key) IN (
        SELECT s.tenant, s.operation, s.idempotency_key FROM idem_records s
        WHERE s.state = 'EXPIRED' AND s.expires_at <= now() - (@grace_ms::bigint) * interval '1 millisecond'
          AND s.expires_at >= @after::timestamptz
        ORDER BY s.expires_at
        LIMIT @batch_size
        FOR UPDATE SKIP LOCKED)
    RETURNING expires_at
)
SELECT count(*)::bigint AS deleted, coalesce(max(expires_at), @after::timestamptz)::timestamptz AS last_expiry
FROM deleted;

-- name: AbandonClaims :many
-- Sweeper: a lease claim past its key's expiry whose lease lapsed was
-- abandoned (its holder died and no client retried). What it did is not
-- known, so it becomes UNKNOWN, never deleted on the spot; the rows are
-- returned so the sweeper can report them.
UPDATE idem_records SET
    state = 'UNKNOWN', lease_expires_at = NULL, updated_at = now()
WHERE (tenant, operation, idempotency_key) IN (
    SELECT s.tenant, s.operation, s.idempotency_key FROM idem_records s
    WHERE s.state = 'IN_PROGRESS' AND s.expires_at <= now()
      AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= now())
    ORDER BY s.expires_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED)
  AND state = 'IN_PROGRESS'
RETURNING tenant, operation, idempotency_key, attempts, recovery_point, created_at, expires_at;

-- name: CountUnknown :one
-- Sweeper: UNKNOWN records past their expiry, waiting for a resolution.
SELECT count(*) FROM idem_records WHERE state = 'UNKNOWN' AND expires_at <= now();

-- name: DeleteUnknown :execrows
-- Sweeper, only when a grace for unresolved records is configured: UNKNOWN
-- records that stayed unresolved that long after their expiry are deleted.
DELETE FROM idem_records
WHERE (tenant, operation, idempotency_key) IN (
    SELECT s.tenant, s.operation, s.idempotency_key FROM idem_records s
    WHERE s.state = 'UNKNOWN' AND s.expires_at <= now() - (@grace_ms::bigint) * interval '1 millisecond'
    ORDER BY s.expires_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED);
