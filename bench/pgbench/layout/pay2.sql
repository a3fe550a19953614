BEGIN;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
INSERT INTO bench_payments2 (idempotency_key, amount, currency, reference) VALUES (gen_random_uuid()::text, 100, 'EUR', 'pgbench');
COMMIT;
