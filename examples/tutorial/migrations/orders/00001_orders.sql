-- +goose Up
-- The shop's own tables. Every row carries its tenant: the records of the
-- idempotency engine are per tenant, and so is the business data.
CREATE TABLE stock (
    tenant    text    NOT NULL,
    sku       text    NOT NULL,
    available integer NOT NULL CHECK (available >= 0),
    PRIMARY KEY (tenant, sku)
);
CREATE TABLE orders (
    tenant     text        NOT NULL,
    id         uuid        NOT NULL,
    items      jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, id)
);
CREATE TABLE shipments (
    tenant          text        NOT NULL,
    id              uuid        NOT NULL,
    order_id        uuid        NOT NULL,
    tracking_number text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, order_id) REFERENCES orders (tenant, id)
);

-- +goose Down
DROP TABLE shipments;
DROP TABLE orders;
DROP TABLE stock;
