-- The bookkeeper's tables: what it derives from payment events. It applies
-- each payments.payment.created event once, through idemgen's inbox
-- (idem_inbox), in the transaction that writes these rows.
--
-- Deliberately no UNIQUE constraint on ledger_entries.event_id or
-- payment_id: an event applied twice would show as two entries (and a
-- doubled balance), which is what the end-to-end tests look for.
CREATE TABLE ledger_entries (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    text        NOT NULL,
    payment_id  text        NOT NULL,
    amount      bigint      NOT NULL CHECK (amount > 0),
    currency    text        NOT NULL,
    booked_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX ledger_entries_payment_id_idx ON ledger_entries (payment_id);

-- Authorized amounts by currency: a read-modify-write a duplicate delivery
-- would corrupt silently.
CREATE TABLE ledger_balances (
    currency    text        PRIMARY KEY,
    authorized  bigint      NOT NULL DEFAULT 0,
    entries     bigint      NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
