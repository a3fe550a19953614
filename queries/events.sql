-- Queries of the outbox, relay and inbox (runtime/events). Compiled by sqlc
-- into runtime/events/internal/eventsdb; `make generate` after editing.

-- name: NextOrdinal :one
-- The position of the next event of a request, counted in the caller's
-- transaction: the request's events so far (its own inserts included) + 1.
-- The engine serialises a key's executions, so no two transactions number
-- the same request at once; if they did, the primary key on the derived id
-- would make the second wait for the first.
SELECT (coalesce(max(ordinal), 0) + 1)::integer AS next
FROM idem_outbox
WHERE tenant = @tenant AND operation = @operation AND idempotency_key = @idempotency_key;

-- name: InsertEvent :execrows
-- Writes an event in the business transaction. An id already present is left
-- alone: the same id is, by construction, the same event of the same request.
INSERT INTO idem_outbox (
    tenant, id, aggregate_key, operation, idempotency_key, ordinal, event_type, event)
VALUES (
    @tenant, @id, sqlc.narg(aggregate_key), sqlc.narg(operation), sqlc.narg(idempotency_key),
    sqlc.narg(ordinal), @event_type, @event)
ON CONFLICT (tenant, id) DO NOTHING;

-- name: ClaimEvents :many
-- Claims up to batch_size due events for publication, locked until the
-- relay's transaction ends; concurrent relays skip each other's rows. An event
-- whose aggregate has an earlier PENDING event (due or backing off, claimed
-- by another relay or not) is not claimed: an aggregate's events leave one at
-- a time, in insertion order, and a failing event holds back the later ones.
SELECT o.seq, o.tenant, o.id, o.attempts, o.event
FROM idem_outbox AS o
WHERE o.state = 'PENDING'
  AND o.next_attempt_at <= now()
  AND (o.aggregate_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM idem_outbox AS p
        WHERE p.tenant = o.tenant
          AND p.aggregate_key = o.aggregate_key
          AND p.state = 'PENDING'
          AND p.aggregate_key IS NOT NULL
          AND p.seq < o.seq))
ORDER BY o.seq
LIMIT @batch_size
FOR UPDATE OF o SKIP LOCKED;

-- name: DeleteEvents :execrows
-- Removes published events, one statement per batch.
DELETE FROM idem_outbox WHERE seq = ANY(@seqs::bigint[]);

-- name: MarkPublished :execrows
-- Keeps published events (Relay.KeepPublished > 0), for SweepPublished.
UPDATE idem_outbox SET state = 'PUBLISHED', published_at = now()
WHERE seq = ANY(@seqs::bigint[]);

-- name: RecordFailure :execrows
-- Counts a failed attempt: the event is retried after delay_ms, or moves to
-- DEAD after max_attempts attempts (or at once when dead is set).
UPDATE idem_outbox SET
    attempts        = attempts + 1,
    last_error      = @last_error,
    next_attempt_at = now() + (@delay_ms::bigint) * interval '1 millisecond',
    state           = CASE WHEN @dead::boolean OR attempts + 1 >= @max_attempts::integer
                           THEN 'DEAD' ELSE state END
WHERE seq = @seq;

-- name: SweepPublished :execrows
-- Deletes up to batch_size events published more than keep_ms ago.
DELETE FROM idem_outbox WHERE seq IN (
    SELECT k.seq FROM idem_outbox AS k
    WHERE k.state = 'PUBLISHED'
      AND k.published_at < now() - (@keep_ms::bigint) * interval '1 millisecond'
    ORDER BY k.published_at
    LIMIT @batch_size);

-- name: RequeueDead :execrows
-- Gives dead-lettered events (of one tenant, by id) a fresh start.
UPDATE idem_outbox SET state = 'PENDING', attempts = 0, next_attempt_at = now(), last_error = NULL
WHERE tenant = @tenant AND id = ANY(@ids::text[]) AND state = 'DEAD';

-- name: InsertInbox :execrows
-- Records a message as processed, in the consumer's transaction. No row
-- inserted means the key is known: committed by an earlier delivery, or
-- committed by a concurrent one this statement waited for.
INSERT INTO idem_inbox (consumer, event_key, fingerprint)
VALUES (@consumer, @event_key, @fingerprint)
ON CONFLICT (consumer, event_key) DO NOTHING;

-- name: GetInbox :one
SELECT fingerprint, processed_at FROM idem_inbox
WHERE consumer = @consumer AND event_key = @event_key;

-- name: SweepInbox :execrows
-- Forgets up to batch_size messages processed more than keep_ms ago.
DELETE FROM idem_inbox WHERE (consumer, event_key) IN (
    SELECT k.consumer, k.event_key FROM idem_inbox AS k
    WHERE k.processed_at < now() - (@keep_ms::bigint) * interval '1 millisecond'
    ORDER BY k.processed_at
    LIMIT @batch_size);

-- name: OutboxStats :one
-- What an operator watches: events waiting (and since when: the relay's
-- lag, by the database clock) and dead letters. Pending events are found
-- through the pending index; dead ones are few, or an alert is due anyway.
SELECT
    (SELECT count(*) FROM idem_outbox p WHERE p.state = 'PENDING')::bigint AS pending,
    coalesce(extract(epoch FROM now() - (SELECT min(p.created_at) FROM idem_outbox p WHERE p.state = 'PENDING')), 0)::float8 AS oldest_pending_seconds,
    (SELECT count(*) FROM idem_outbox d WHERE d.state = 'DEAD')::bigint AS dead;
