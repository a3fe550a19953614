-- Lease mode's floor: two durable commits per request. The claim (an
-- IN_PROGRESS record) commits first; then the business transaction commits
-- with the record completed in it, found by its id as the engine finds it.
\set k random(1, 2000000000)
BEGIN;
INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, lease_expires_at, expires_at)
VALUES (idem_record_id('', 'createLease', 'l' || :client_id || '-' || :k), '', 'createLease', 'l' || :client_id || '-' || :k,
    'IN_PROGRESS', sha256(convert_to(:k::text, 'UTF8')), 'bench', now() + interval '10 seconds', now() + interval '24 hours')
ON CONFLICT DO NOTHING;
COMMIT;
BEGIN;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
UPDATE idem_records SET state = 'COMPLETED', response_status = 201, response_headers = '{"Content-Type": ["application/json"]}',
    response_body = convert_to('{"id":1,"amount":100,"currency":"EUR","reference":"pgbench"}', 'UTF8'), completed_at = now(), lease_expires_at = NULL
WHERE id = idem_record_id('', 'createLease', 'l' || :client_id || '-' || :k) AND state = 'IN_PROGRESS';
COMMIT;
