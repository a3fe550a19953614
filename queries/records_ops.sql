-- Queries of the sweeper's sample of live records (runtime/idem), compiled
-- with records.sql into runtime/idem/internal/store.

-- name: CountLive :one
-- Live records: IN_PROGRESS claims (abandoned: their lease lapsed) and
-- UNKNOWN outcomes, and the age of the oldest, by the database clock. No
-- index names the state (one would keep lease completions from being
-- heap-only updates), so this walks the table: about 0.35 s per million
-- records on two cores; SweeperConfig.LiveInterval spaces it out.
SELECT
    count(*) FILTER (WHERE state = 'IN_PROGRESS')::bigint AS in_progress,
    count(*) FILTER (WHERE state = 'IN_PROGRESS' AND coalesce(lease_expires_at <= now(), true))::bigint AS abandoned,
    count(*) FILTER (WHERE state = 'UNKNOWN')::bigint AS unknown,
    coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_seconds
FROM idem_records
WHERE state IN ('IN_PROGRESS', 'UNKNOWN');
