-- payments example: the business tables. Applied after idemgen's own
-- migrations (idem_records), in file name order.
--
-- Deliberately no UNIQUE constraint on payments.idempotency_key: the example
-- relies on idemgen alone to keep one payment per key, so its end-to-end
-- tests would see a duplicate if the engine ever let one through. A real
-- service may well add one as a second line of defence.
CREATE TABLE payments (
    id               text        PRIMARY KEY,
    idempotency_key  text        NOT NULL,
    amount           bigint      NOT NULL CHECK (amount > 0),
    currency         text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    description      text        NOT NULL DEFAULT '',
    order_id         text        NOT NULL DEFAULT '',
    status           text        NOT NULL DEFAULT 'authorized',
    charge_id        text        NOT NULL,
    captured_amount  bigint      NOT NULL DEFAULT 0,
    refunded_amount  bigint      NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT payments_status_check CHECK (status IN ('authorized', 'captured')),
    CONSTRAINT payments_captured_check CHECK (captured_amount BETWEEN 0 AND amount),
    CONSTRAINT payments_refunded_check CHECK (refunded_amount BETWEEN 0 AND captured_amount)
);

CREATE INDEX payments_created_at_idx ON payments (created_at DESC, id DESC);
CREATE INDEX payments_idempotency_key_idx ON payments (idempotency_key);

CREATE TABLE refunds (
    id               text        PRIMARY KEY,
    payment_id       text        NOT NULL REFERENCES payments (id),
    idempotency_key  text        NOT NULL,
    amount           bigint      NOT NULL CHECK (amount > 0),
    reason           text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX refunds_payment_id_idx ON refunds (payment_id);
