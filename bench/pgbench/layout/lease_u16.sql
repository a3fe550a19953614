\set k random(1, 9000000000000000000)
BEGIN;
INSERT INTO rec_u16 (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, lease_expires_at, expires_at)
VALUES (md5('l' || :k)::uuid, '', 'createLease', 'l' || :k, 'IN_PROGRESS', sha256(convert_to(random()::text, 'UTF8')), 'bench', now() + interval '30 seconds', now() + interval '24 hours')
ON CONFLICT (id) DO NOTHING RETURNING fence;
COMMIT;
BEGIN;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
UPDATE rec_u16 SET state = 'COMPLETED', response_status = 201, response_headers = '{"Content-Type": ["application/json"]}', response_body = convert_to('{"id":1,"amount":100,"currency":"EUR","reference":"pgbench"}', 'UTF8'), completed_at = now(), lease_expires_at = NULL, updated_at = now()
WHERE id = md5('l' || :k)::uuid AND fence = 1 AND state = 'IN_PROGRESS';
COMMIT;
