-- Queries of the idempotency engine (runtime/idem). Compiled by sqlc into
-- runtime/idem/internal/store; `make generate` after editing.

-- name: GetRecord :one
-- A read used to classify a conflict after a claim returned no row, and as
-- the replay fast path. Never followed by an INSERT decision: claims below
-- are the only check-and-set.
-- expired and lease_lapsed are judged by the database clock, the same clock
-- Claim decides by, so the engine never compares timestamps itself.
SELECT *,
    (expires_at <= now())::boolean AS expired,
    coalesce(lease_expires_at <= now(), false)::boolean AS lease_lapsed
FROM idem_records
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key;

-- name: Claim :one
-- Claims a key in one statement. Inserts a fresh IN_PROGRESS record, or takes
-- over an existing one when it may be re-run:
--   * FAILED_RETRYABLE with the same fingerprint (a handler error or 5xx);
--   * an expired final record when onExpired is execute (any fingerprint);
--   * lease mode: an IN_PROGRESS claim whose lease lapsed, or an UNKNOWN one,
--     with the same fingerprint (taken_over tells the caller to recover).
-- Returns no row when the key is held otherwise; the caller then reads the
-- record to classify (replay, conflict, in flight, expired). In atomic mode
-- this runs inside the business transaction, so a concurrent duplicate blocks
-- on the primary key until the first commits or rolls back.
INSERT INTO idem_records AS r (
    tenant, operation, idempotency_key, state, fingerprint, schema_version,
    lease_expires_at, expires_at)
VALUES (
    @tenant, @operation, @idempotency_key, 'IN_PROGRESS', @fingerprint, @schema_version,
    CASE WHEN @lease_ms::bigint > 0 THEN now() + (@lease_ms::bigint) * interval '1 millisecond' END,
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
   OR (@lease_ms::bigint > 0
       AND r.fingerprint = EXCLUDED.fingerprint
       AND ((r.state = 'IN_PROGRESS' AND r.lease_expires_at <= now()) OR r.state = 'UNKNOWN'))
RETURNING fence, attempts, taken_over, recovery_point, recovery_data, created_at;

-- name: Complete :execrows
-- Stores the outcome (COMPLETED or FAILED_REPLAYABLE) if the caller still
-- holds the claim. Zero rows: the claim was taken over (a zombie holder) and
-- the caller must roll its business transaction back.
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

-- name: RecordRetryable :exec
-- Atomic mode: the business transaction (and the claim in it) rolled back;
-- remember the key as FAILED_RETRYABLE so it stays bound to its payload.
-- Never overwrites a record another request has since claimed or completed.
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
-- claim rolled back with the transaction, drops a FAILED_RETRYABLE record of
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

-- name: RenewLease :execrows
UPDATE idem_records SET
    lease_expires_at = now() + (@lease_ms::bigint) * interval '1 millisecond', updated_at = now()
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND fence = @fence AND state = 'IN_PROGRESS';

-- name: ExpireRecords :execrows
-- Sweeper, phase one: final records past their expiry become EXPIRED
-- tombstones (response dropped, fingerprint kept, so onExpired=reject still
-- recognises the key). Bounded batch; IN_PROGRESS and UNKNOWN are never touched.
UPDATE idem_records SET
    state = 'EXPIRED', response_status = NULL, response_headers = NULL, response_body = NULL,
    recovery_point = NULL, recovery_data = NULL, updated_at = now()
WHERE (tenant, operation, idempotency_key) IN (
    SELECT s.tenant, s.operation, s.idempotency_key FROM idem_records s
    WHERE s.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE') AND s.expires_at <= now()
    ORDER BY s.expires_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED);

-- name: DeleteExpired :execrows
-- Sweeper, phase two: tombstones older than the grace period are deleted.
DELETE FROM idem_records
WHERE (tenant, operation, idempotency_key) IN (
    SELECT s.tenant, s.operation, s.idempotency_key FROM idem_records s
    WHERE s.state = 'EXPIRED' AND s.expires_at <= now() - (@grace_ms::bigint) * interval '1 millisecond'
    ORDER BY s.expires_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED);
