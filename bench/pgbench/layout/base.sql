BEGIN;
INSERT INTO bench_payments (idempotency_key, amount, currency, reference) VALUES (NULL, 100, 'EUR', 'pgbench') RETURNING id;
COMMIT;
