-- Atomic mode's statements for a new key: the pre-read (GetRecord, a miss), then
-- the business transaction with the completed record inserted before COMMIT.
\set k random(1, 2000000000)
SELECT state FROM idem_records WHERE id = idem_record_id('', 'createAtomic', 'r' || :k);
BEGIN;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, response_status, response_headers, response_body, created_at, completed_at, expires_at)
VALUES (idem_record_id('', 'createAtomic', 'e' || :client_id || '-' || :k), '', 'createAtomic', 'e' || :client_id || '-' || :k, 'COMPLETED', sha256(convert_to(random()::text, 'UTF8')), 'bench', 201, '{"Content-Type": ["application/json"]}', convert_to('{"id":1,"amount":100,"currency":"EUR","reference":"pgbench"}', 'UTF8'), now(), now(), now() + interval '24 hours')
ON CONFLICT DO NOTHING;
COMMIT;
