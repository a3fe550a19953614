-- One key inserted twice by partitions: the primary key (id, expires_at)
-- holds, yet a retry one second later, whose expiry falls in the next
-- partition, inserts the same id again. Run once by layout.sh.
INSERT INTO rec_part (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, response_status, response_body, completed_at, expires_at)
VALUES ('00000000-0000-0000-0000-0000000000d0', '', 'op', 'dup', 'COMPLETED', sha256('a'), 'v', 201, '', now(),
        date_trunc('hour', now()) + interval '25 hours' - interval '1 second');
INSERT INTO rec_part (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, response_status, response_body, completed_at, expires_at)
VALUES ('00000000-0000-0000-0000-0000000000d0', '', 'op', 'dup', 'COMPLETED', sha256('a'), 'v', 201, '', now(),
        date_trunc('hour', now()) + interval '25 hours');
SELECT 'partition boundary: records of one key = ' || count(*) AS partition_check FROM rec_part WHERE idempotency_key = 'dup';
