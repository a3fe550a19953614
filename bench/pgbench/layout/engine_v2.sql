\set k random(1, 9000000000000000000)
SELECT state FROM idem_records WHERE tenant = '' AND operation = 'createAtomic' AND idempotency_key = 'r' || :k;
BEGIN;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
INSERT INTO idem_records (tenant, operation, idempotency_key, state, fingerprint, schema_version, response_status, response_headers, response_body, created_at, completed_at, expires_at)
VALUES ('', 'createAtomic', 'r' || :k, 'COMPLETED', sha256(convert_to(random()::text, 'UTF8')), 'bench', 201, '{"Content-Type": ["application/json"]}', convert_to('{"id":1,"amount":100,"currency":"EUR","reference":"pgbench"}', 'UTF8'), now(), now(), now() + interval '24 hours');
COMMIT;
