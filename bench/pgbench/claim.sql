-- The engine before issue 12: a claim inserted first, then the business write,
-- then the claim updated with the response, in one transaction.
\set k random(1, 2000000000)
BEGIN;
INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, lease_expires_at, expires_at)
VALUES (idem_record_id('', 'createAtomic', 'c' || :client_id || '-' || :k), '', 'createAtomic', 'c' || :client_id || '-' || :k, 'IN_PROGRESS', sha256(convert_to(:k::text, 'UTF8')), 'bench', now() + interval '30 seconds', now() + interval '24 hours')
ON CONFLICT DO NOTHING;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
UPDATE idem_records SET state = 'COMPLETED', response_status = 201, response_headers = '{"Content-Type": ["application/json"]}', response_body = convert_to('{"id":1,"amount":100,"currency":"EUR","reference":"pgbench"}', 'UTF8'), completed_at = now(), lease_expires_at = NULL
WHERE id = idem_record_id('', 'createAtomic', 'c' || :client_id || '-' || :k);
COMMIT;
