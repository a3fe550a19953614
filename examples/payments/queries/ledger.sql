-- Queries of the payments example, compiled by sqlc into internal/ledger
-- (go generate). Every write runs in the transaction the generated handler
-- hands in, so it commits together with the idempotency record.

-- name: InsertPayment :one
INSERT INTO payments (id, idempotency_key, amount, currency, description, order_id, charge_id)
VALUES (@id, @idempotency_key, @amount, @currency, @description, @order_id, @charge_id)
RETURNING *;

-- name: GetPayment :one
SELECT * FROM payments WHERE id = @id;

-- name: ListPayments :many
SELECT * FROM payments ORDER BY created_at DESC, id DESC LIMIT @max_rows;

-- name: CapturePayment :one
-- Check-and-set in one statement: only an authorized payment is captured,
-- and never for more than was authorized.
UPDATE payments SET
    status = 'captured', captured_amount = @amount, updated_at = now()
WHERE id = @id AND status = 'authorized' AND @amount::bigint BETWEEN 1 AND amount
RETURNING *;

-- name: AddRefund :one
-- Check-and-set in one statement: the refunded total never exceeds what was
-- captured. No row means no such payment or insufficient funds.
UPDATE payments SET
    refunded_amount = refunded_amount + @amount, updated_at = now()
WHERE id = @id AND captured_amount - refunded_amount >= @amount::bigint
RETURNING *;

-- name: InsertRefund :one
INSERT INTO refunds (id, payment_id, idempotency_key, amount, reason)
VALUES (@id, @payment_id, @idempotency_key, @amount, @reason)
RETURNING *;

-- name: InsertLedgerEntry :exec
-- The bookkeeper's write for a payments.payment.created event.
INSERT INTO ledger_entries (event_id, payment_id, amount, currency)
VALUES (@event_id, @payment_id, @amount, @currency);

-- name: AddToBalance :exec
INSERT INTO ledger_balances AS b (currency, authorized, entries)
VALUES (@currency, @amount::bigint, 1)
ON CONFLICT (currency) DO UPDATE SET
    authorized = b.authorized + EXCLUDED.authorized,
    entries    = b.entries + 1,
    updated_at = now();
