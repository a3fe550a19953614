-- Queries of the idempotency engine (runtime/idem). Compiled by sqlc into
-- runtime/idem/internal/store; `make generate` after editing.
--
-- Every statement judges time by the database clock (now()); the engine
-- never compares a stored timestamp with its own clock.

-- name: GetRecord :one
-- Reads what a request needs to decide about an existing record: replay it,
-- refuse it (another payload, in flight, expired) or claim it. The stored
-- response comes back only for the request's own fingerprint: another
-- payload's request never reads it (the engine also drops it unless the
-- record is final, unexpired and the key's own). A read, never followed by
-- an INSERT decision: the writes below are the only check-and-set.
--
-- The record is found by its id; same_key says whether the row is the
-- key's own (false: another key whose id collides, which the engine
-- refuses rather than answer for). db_now is the database clock when the
-- row was read: the engine measures expiry and leases against it, never
-- against its own clock. One flat row: derived columns (expired, what is
-- left of the lease and of the record, whether it is replayable) computed
-- here in nested subqueries cost ~8.5 µs more per read under pgbench
-- (docs/benchmarks-history.md, "The floor of a replay, and the record
-- read flat").
SELECT ((s.tenant = @tenant::text AND s.operation = @operation::text AND s.idempotency_key = @idempotency_key::text) IS TRUE)::boolean AS same_key,
    s.state,
    (s.fingerprint = @fingerprint::bytea) AS same_request,
    s.schema_version,
    s.attempts,
    s.fence,
    s.created_at,
    s.completed_at,
    s.lease_expires_at,
    s.expires_at,
    now()::timestamptz AS db_now,
    coalesce(CASE WHEN s.fingerprint = @fingerprint::bytea THEN s.response_status END, 0)::integer AS response_status,
    coalesce(CASE WHEN s.fingerprint = @fingerprint::bytea THEN s.response_headers END, '{}')::jsonb AS response_headers,
    coalesce(CASE WHEN s.fingerprint = @fingerprint::bytea THEN s.response_body END, '')::bytea AS response_body
FROM idem_records s
WHERE s.id = @id;

-- name: ImportLegacy :execrows
-- While a v2 table is left from the upgrade (migration 0005): moves the
-- key's v2 record, if there is one, into idem_records before the engine
-- decides about the key, in one statement. Moved, not copied: a record
-- the engine later deletes (a released claim, a released retryable
-- record) must not come back from the v2 table. Two requests (or a
-- request and the sweeper) moving it at once: the second's DELETE waits
-- for the first to commit and then finds nothing, and the record is in
-- idem_records by then.
WITH taken AS (
    DELETE FROM idem_records_v2 v
    WHERE v.tenant = @tenant AND v.operation = @operation AND v.idempotency_key = @idempotency_key
    RETURNING *
)
INSERT INTO idem_records (
    id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
    response_status, response_headers, response_body, attempts, fence, lease_expires_at, taken_over,
    recovery_point, recovery_data, created_at, updated_at, completed_at, expires_at)
SELECT idem_record_id(t.tenant, t.operation, t.idempotency_key), t.tenant, t.operation, t.idempotency_key,
    t.state, t.fingerprint, t.schema_version, t.response_status, t.response_headers, t.response_body,
    t.attempts, t.fence, t.lease_expires_at, t.taken_over, t.recovery_point, t.recovery_data,
    t.created_at, t.updated_at, t.completed_at, t.expires_at
FROM taken t
ON CONFLICT (id) DO NOTHING;

-- name: InsertOutcome :one
-- Atomic mode, a key with no record: the outcome is the record's one write,
-- inserted in the business transaction just before COMMIT. A concurrent
-- duplicate that got there first makes it fail with unique_violation
-- (23505), after waiting for that duplicate's transaction to end; the
-- COMMIT queued behind it is then skipped and the business writes roll back.
-- (A record of another key whose id collides fails it the same way; the
-- read that follows tells the two apart.)
INSERT INTO idem_records (
    id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
    response_status, response_headers, response_body, created_at, completed_at, expires_at)
VALUES (
    @id, @tenant, @operation, @idempotency_key, @state, @fingerprint, @schema_version,
    @response_status, @response_headers, @response_body, @created_at, now(),
    now() + (@ttl_ms::bigint) * interval '1 millisecond')
RETURNING completed_at;

-- name: ReplaceOutcome :one
-- Atomic mode, a key whose record may be run again (FAILED_RETRYABLE with
-- the same fingerprint, or expired when onExpired is execute): the outcome
-- replaces it in the business transaction. When the record is no longer
-- replaceable (a concurrent duplicate completed it, or it is another key's
-- whose id collides) the statement fails with division by zero (22012), so
-- the COMMIT queued behind it is skipped. left_ms is how long the record
-- has left.
WITH done AS (
    INSERT INTO idem_records AS r (
        id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
        response_status, response_headers, response_body, created_at, completed_at, expires_at)
    VALUES (
        @id, @tenant, @operation, @idempotency_key, @state, @fingerprint, @schema_version,
        @response_status, @response_headers, @response_body, @created_at, now(),
        now() + (@ttl_ms::bigint) * interval '1 millisecond')
    ON CONFLICT (id) DO UPDATE SET
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
    WHERE r.tenant = EXCLUDED.tenant AND r.operation = EXCLUDED.operation AND r.idempotency_key = EXCLUDED.idempotency_key
      AND ((r.state = 'FAILED_RETRYABLE' AND r.fingerprint = EXCLUDED.fingerprint AND r.expires_at > now())
        OR (@take_expired::boolean
            AND r.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED')
            AND (r.expires_at <= now() OR r.state = 'EXPIRED')))
    RETURNING floor(extract(epoch FROM r.expires_at - now()) * 1000)::bigint AS left_ms, r.completed_at)
SELECT (1 / count(*))::integer AS stored, coalesce(min(left_ms), 0)::bigint AS left_ms,
    max(completed_at)::timestamptz AS completed_at FROM done;

-- name: Claim :one
-- Lease mode: claims a key in one statement, in a transaction of its own
-- that commits before the handler runs. Inserts a fresh IN_PROGRESS record,
-- or takes over an existing one when it may be re-run:
--   * FAILED_RETRYABLE with the same fingerprint (a handler error or 5xx);
--   * an expired final record when onExpired is execute (any fingerprint);
--   * an IN_PROGRESS claim whose lease lapsed, or an UNKNOWN one, with the
--     same fingerprint.
-- taken_over tells the caller to recover before the handler runs: the
-- claim follows an attempt that may have acted outside the database (a
-- lapsed or UNKNOWN claim, or a FAILED_RETRYABLE one whose handler ran,
-- which FailRetryable marks with taken_over).
-- Returns no row when the key is held otherwise (or the row is another
-- key's whose id collides); the caller then reads the record to classify
-- (replay, conflict, in flight, expired, collision).
INSERT INTO idem_records AS r (
    id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
    lease_expires_at, expires_at)
VALUES (
    @id, @tenant, @operation, @idempotency_key, 'IN_PROGRESS', @fingerprint, @schema_version,
    now() + (@lease_ms::bigint) * interval '1 millisecond',
    now() + (@ttl_ms::bigint) * interval '1 millisecond')
ON CONFLICT (id) DO UPDATE SET
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
    taken_over       = r.state IN ('IN_PROGRESS', 'UNKNOWN')
                       OR (r.state = 'FAILED_RETRYABLE' AND r.taken_over AND r.expires_at > now()),
    recovery_point   = CASE WHEN r.expires_at <= now() THEN NULL ELSE r.recovery_point END,
    recovery_data    = CASE WHEN r.expires_at <= now() THEN NULL ELSE r.recovery_data END,
    created_at       = CASE WHEN r.expires_at <= now() THEN now() ELSE r.created_at END,
    expires_at       = CASE WHEN r.expires_at <= now() THEN EXCLUDED.expires_at ELSE r.expires_at END,
    updated_at       = now()
WHERE r.tenant = EXCLUDED.tenant AND r.operation = EXCLUDED.operation AND r.idempotency_key = EXCLUDED.idempotency_key
  AND ((r.state = 'FAILED_RETRYABLE' AND r.fingerprint = EXCLUDED.fingerprint AND r.expires_at > now())
    OR (@take_expired::boolean
        AND r.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED')
        AND (r.expires_at <= now() OR r.state = 'EXPIRED'))
    OR (r.fingerprint = EXCLUDED.fingerprint
        AND ((r.state = 'IN_PROGRESS' AND r.lease_expires_at <= now()) OR r.state = 'UNKNOWN')))
RETURNING fence, attempts, taken_over, recovery_point, recovery_data, created_at,
    floor(extract(epoch FROM expires_at - now()) * 1000)::bigint AS expires_left_ms;

-- name: Complete :one
-- Lease mode: stores the outcome (COMPLETED or FAILED_REPLAYABLE) if the
-- caller still holds the claim. No row: the claim was taken over (a zombie
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
WHERE id = @id AND fence = @fence AND state = 'IN_PROGRESS'
RETURNING completed_at;

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
    WHERE id = @id AND fence = @fence AND state = 'IN_PROGRESS'
    RETURNING completed_at)
SELECT (1 / count(*))::integer AS stored, max(completed_at)::timestamptz AS completed_at FROM done;

-- name: FailRetryable :execrows
-- Lease mode: the attempt failed and its writes were rolled back; a retry
-- with the same payload may run again. taken_over stays set when the claim
-- was a takeover, and is set when the handler ran (@handler_ran): what it
-- did outside the database is not known, so the retry's claim recovers
-- first (Claim returns taken_over).
UPDATE idem_records SET
    state = 'FAILED_RETRYABLE', lease_expires_at = NULL,
    taken_over = taken_over OR @handler_ran::boolean, updated_at = now()
WHERE id = @id AND fence = @fence AND state = 'IN_PROGRESS';

-- name: RecordRetryable :execrows
-- Atomic mode: the business transaction rolled back; remember the key as
-- FAILED_RETRYABLE so it stays bound to its payload. Never overwrites a
-- record another request has since completed: zero rows then, and the
-- caller reads what that request stored.
INSERT INTO idem_records AS r (
    id, tenant, operation, idempotency_key, state, fingerprint, schema_version, expires_at)
VALUES (
    @id, @tenant, @operation, @idempotency_key, 'FAILED_RETRYABLE', @fingerprint, @schema_version,
    now() + (@ttl_ms::bigint) * interval '1 millisecond')
ON CONFLICT (id) DO UPDATE SET
    attempts = r.attempts + 1, updated_at = now()
WHERE r.tenant = EXCLUDED.tenant AND r.operation = EXCLUDED.operation AND r.idempotency_key = EXCLUDED.idempotency_key
  AND r.state = 'FAILED_RETRYABLE' AND r.fingerprint = EXCLUDED.fingerprint;

-- name: ReleaseClaim :execrows
-- Lease mode: the outcome is not kept (400, 401, 403, 429, ...): free the
-- key, if the claim still holds, so a corrected request runs.
DELETE FROM idem_records
WHERE id = @id AND fence = @fence AND state = 'IN_PROGRESS';

-- name: ReleaseRetryable :execrows
-- Atomic mode: the outcome of a re-run of a FAILED_RETRYABLE record is not
-- kept; its writes rolled back with the transaction, and the record of the
-- same payload goes, so a corrected request runs.
DELETE FROM idem_records
WHERE id = @id AND tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key
  AND state = 'FAILED_RETRYABLE' AND fingerprint = @fingerprint;

-- name: MarkUnknown :execrows
-- Lease mode: a recovery hook could not tell whether a taken-over claim's
-- external effect happened. The next retry takes the claim over again.
UPDATE idem_records SET
    state = 'UNKNOWN', lease_expires_at = NULL, updated_at = now()
WHERE id = @id AND fence = @fence AND state = 'IN_PROGRESS';

-- name: SaveRecoveryPoint :execrows
-- Lease mode: records how far a multi-step handler got and renews its lease,
-- committed at once (outside the business transaction).
UPDATE idem_records SET
    recovery_point   = @recovery_point,
    recovery_data    = @recovery_data,
    lease_expires_at = now() + (@lease_ms::bigint) * interval '1 millisecond',
    updated_at       = now()
WHERE id = @id AND fence = @fence AND state = 'IN_PROGRESS';

-- name: RenewLeases :many
-- Lease mode: renews every live claim of one engine in one statement (the
-- engine's renewer, on a connection of its own). A claim that is not
-- returned no longer holds: another request took it over.
UPDATE idem_records AS r SET
    lease_expires_at = now() + v.lease_ms * interval '1 millisecond',
    updated_at       = now()
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@fences::bigint[]) AS fence,
             unnest(@lease_ms::bigint[]) AS lease_ms) AS v
WHERE r.id = v.id
  AND r.fence = v.fence AND r.state = 'IN_PROGRESS'
RETURNING r.id, r.fence;

-- The sweeper walks the table in physical order, a range of pages
-- [@first_page, @end_page) per statement, instead of keeping an index on
-- expires_at up to date on every insert: one statement reads its pages
-- once (a TID range scan), changes at most @batch_size rows of them, and
-- counts the live records of the pages it finished (docs/design.md,
-- "Expiry").

-- name: TablePages :one
-- How many pages idem_records has: where a pass of the sweeper ends.
SELECT (pg_relation_size('idem_records') / current_setting('block_size')::bigint)::bigint AS pages;

-- name: TableInserts :one
-- Rows inserted into idem_records since the statistics were reset, as
-- PostgreSQL counts them (a backend reports its counts about once a
-- second): the sweeper's measure of the insert rate it keeps up with.
SELECT pg_stat_get_tuples_inserted('idem_records'::regclass)::bigint AS inserted;

-- name: SweepRange :one
-- Sweeper, one step over the pages [@first_page, @end_page):
--   * deletes the final records (and EXPIRED ones, resolved so by hand)
--     whose expiry plus the grace has passed, and, when
--     @unknown_grace_ms > 0, the UNKNOWN records that long past their
--     expiry. Until the grace ends an expired record stays, so that
--     onExpired=reject still recognises its key (no request replays it:
--     expiry is judged by expires_at);
--   * makes UNKNOWN a lease claim past its key's expiry whose lease lapsed:
--     it was abandoned (its holder died and no client retried), what it did
--     is not known, so it is never deleted on the spot; its key, attempts
--     and recovery point are returned for the report;
--   * never touches a live claim (its lease held, or its key not expired).
-- Rows other transactions hold are waited for (the sweeper's own commit
-- does not wait for the disk: see async). At most @batch_size rows
-- change, the first ones in physical order; when
-- that many were due, next_page is the page of the last one taken (the
-- next step starts there), else @end_page. The live records (IN_PROGRESS,
-- UNKNOWN) of the pages before next_page are counted as they are after
-- this statement. ((ARRAY[ctid])[1] is ctid: sqlc knows no system column
-- in a select list.)
WITH scan AS MATERIALIZED (
    SELECT (ARRAY[s.ctid])[1] AS tid, s.id, s.state, s.expires_at, s.lease_expires_at, s.created_at
    FROM idem_records s
    WHERE s.ctid >= ('(' || @first_page::bigint || ',0)')::tid AND s.ctid < ('(' || @end_page::bigint || ',0)')::tid
      AND (s.state IN ('IN_PROGRESS', 'UNKNOWN') OR s.expires_at <= now() - (@grace_ms::bigint) * interval '1 millisecond')
), due AS MATERIALIZED (
    SELECT d.tid FROM scan d
    WHERE (d.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED')
            AND d.expires_at <= now() - (@grace_ms::bigint) * interval '1 millisecond')
       OR (d.state = 'IN_PROGRESS' AND d.expires_at <= now() AND coalesce(d.lease_expires_at <= now(), true))
       OR (d.state = 'UNKNOWN' AND @unknown_grace_ms::bigint > 0
            AND d.expires_at <= now() - (@unknown_grace_ms::bigint) * interval '1 millisecond')
    ORDER BY d.tid
    LIMIT @batch_size
), deleted AS (
    -- The conditions again, on the row as it is now: a row another
    -- transaction changed since the scan (a new outcome stored on an
    -- expired key, a claim) is taken only if it is still due; one it
    -- holds is waited for.
    DELETE FROM idem_records r
    WHERE r.ctid = ANY(ARRAY(SELECT tid FROM due))
      AND ((r.state IN ('COMPLETED', 'FAILED_REPLAYABLE', 'FAILED_RETRYABLE', 'EXPIRED')
              AND r.expires_at <= now() - (@grace_ms::bigint) * interval '1 millisecond')
        OR (r.state = 'UNKNOWN' AND @unknown_grace_ms::bigint > 0
              AND r.expires_at <= now() - (@unknown_grace_ms::bigint) * interval '1 millisecond'))
    RETURNING r.id, r.state
), abandoned AS (
    UPDATE idem_records r SET state = 'UNKNOWN', lease_expires_at = NULL, updated_at = now()
    WHERE r.ctid = ANY(ARRAY(SELECT tid FROM due))
      AND r.state = 'IN_PROGRESS' AND r.expires_at <= now() AND coalesce(r.lease_expires_at <= now(), true)
    RETURNING r.id, r.tenant, r.operation, r.idempotency_key, r.attempts, coalesce(r.recovery_point, '') AS recovery_point,
        r.created_at, r.expires_at
), changed AS (
    SELECT id FROM deleted UNION ALL SELECT id FROM abandoned
), async AS (
    -- Commits without waiting for the WAL to reach the disk: a step a
    -- crash loses is done again by the next pass.
    SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
), bound AS (
    SELECT CASE WHEN (SELECT count(*) FROM due) >= @batch_size
        THEN ((SELECT tid FROM due ORDER BY tid DESC LIMIT 1)::text::point)[0]::bigint
        ELSE @end_page::bigint END AS next_page
), live AS (
    -- The live records of the finished pages, after this statement: a
    -- claim it abandoned counts as UNKNOWN (and expired), a record it
    -- deleted not at all.
    SELECT
        count(*) FILTER (WHERE s.state = 'IN_PROGRESS' AND l.id IS NULL) AS in_progress,
        count(*) FILTER (WHERE s.state = 'IN_PROGRESS' AND l.id IS NULL
            AND coalesce(s.lease_expires_at <= now(), true)) AS abandoned,
        count(*) FILTER (WHERE (s.state = 'UNKNOWN' AND l.id IS NULL) OR (s.state = 'IN_PROGRESS' AND l.id IS NOT NULL)) AS unknown,
        count(*) FILTER (WHERE (s.state = 'UNKNOWN' AND l.id IS NULL AND s.expires_at <= now())
            OR (s.state = 'IN_PROGRESS' AND l.id IS NOT NULL)) AS unknown_expired,
        min(s.created_at) FILTER (WHERE s.state = 'IN_PROGRESS' OR l.id IS NULL) AS oldest
    FROM scan s LEFT JOIN changed l ON l.id = s.id
    WHERE s.state IN ('IN_PROGRESS', 'UNKNOWN')
      AND s.tid < ('(' || (SELECT next_page FROM bound) || ',0)')::tid
)
SELECT
    (SELECT count(*) FROM deleted WHERE state <> 'UNKNOWN')::bigint AS deleted,
    (SELECT count(*) FROM deleted WHERE state = 'UNKNOWN')::bigint AS unknown_deleted,
    (SELECT count(*) FROM due)::bigint AS due,
    (SELECT next_page FROM bound)::bigint AS next_page,
    live.in_progress::bigint AS in_progress, live.abandoned::bigint AS live_abandoned,
    live.unknown::bigint AS unknown, live.unknown_expired::bigint AS unknown_expired,
    coalesce(extract(epoch FROM now() - live.oldest), 0)::float8 AS oldest_seconds,
    coalesce(ab.tenants, '{}')::text[] AS abandoned_tenants,
    coalesce(ab.operations, '{}')::text[] AS abandoned_operations,
    coalesce(ab.keys, '{}')::text[] AS abandoned_keys,
    coalesce(ab.attempts, '{}')::int[] AS abandoned_attempts,
    coalesce(ab.recovery_points, '{}')::text[] AS abandoned_recovery_points,
    coalesce(ab.created, '{}')::timestamptz[] AS abandoned_created,
    coalesce(ab.expires, '{}')::timestamptz[] AS abandoned_expires
FROM live, async, (
    SELECT array_agg(a.tenant) AS tenants, array_agg(a.operation) AS operations, array_agg(a.idempotency_key) AS keys,
        array_agg(a.attempts) AS attempts, array_agg(a.recovery_point) AS recovery_points,
        array_agg(a.created_at) AS created, array_agg(a.expires_at) AS expires
    FROM abandoned a) ab;

-- name: LegacyTable :one
-- Whether the v2 table left by migration 0005 is still there.
SELECT (to_regclass('idem_records_v2') IS NOT NULL)::boolean AS present;

-- name: MoveLegacy :one
-- Sweeper, while idem_records_v2 exists: moves up to @batch_size of its
-- records into idem_records in one statement (those past their expiry and
-- the grace are only deleted). taken below @batch_size: it is empty now.
WITH taken AS (
    DELETE FROM idem_records_v2
    WHERE ctid = ANY(ARRAY(SELECT ctid FROM idem_records_v2 LIMIT @batch_size FOR UPDATE SKIP LOCKED))
    RETURNING *
), moved AS (
    INSERT INTO idem_records (
        id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
        response_status, response_headers, response_body, attempts, fence, lease_expires_at, taken_over,
        recovery_point, recovery_data, created_at, updated_at, completed_at, expires_at)
    SELECT idem_record_id(t.tenant, t.operation, t.idempotency_key), t.tenant, t.operation, t.idempotency_key,
        t.state, t.fingerprint, t.schema_version, t.response_status, t.response_headers, t.response_body,
        t.attempts, t.fence, t.lease_expires_at, t.taken_over, t.recovery_point, t.recovery_data,
        t.created_at, t.updated_at, t.completed_at, t.expires_at
    FROM taken t
    WHERE t.state IN ('IN_PROGRESS', 'UNKNOWN') OR t.expires_at > now() - (@grace_ms::bigint) * interval '1 millisecond'
    ON CONFLICT (id) DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM taken)::bigint AS taken, (SELECT count(*) FROM moved)::bigint AS moved;
