-- The shop's orders. An order is written before its payment is asked for
-- and completed after, in the transaction that also stores the request's
-- idempotency record: both commit, or neither.
CREATE TABLE orders (
    id         text PRIMARY KEY,
    reference  text NOT NULL UNIQUE,
    amount     bigint NOT NULL,
    currency   text NOT NULL,
    status     text NOT NULL CHECK (status IN ('pending', 'paid')),
    payment_id text,
    charge_id  text,
    created_at timestamptz NOT NULL DEFAULT now()
);
