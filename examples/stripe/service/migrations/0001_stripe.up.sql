-- The Stripe example's own tables. Every row belongs to an account (the
-- holder of the API key that created it).
CREATE TABLE customers (
    id          text PRIMARY KEY,
    account     text   NOT NULL,
    email       text,
    name        text,
    description text,
    phone       text,
    metadata    jsonb  NOT NULL DEFAULT '{}',
    created     bigint NOT NULL
);

CREATE TABLE payment_intents (
    id              text   PRIMARY KEY,
    account         text   NOT NULL,
    amount          bigint NOT NULL CHECK (amount > 0),
    currency        text   NOT NULL,
    customer        text   REFERENCES customers (id),
    description     text,
    payment_method  text,
    receipt_email   text,
    capture_method  text   NOT NULL,
    status          text   NOT NULL,
    amount_received bigint NOT NULL DEFAULT 0,
    metadata        jsonb  NOT NULL DEFAULT '{}',
    created         bigint NOT NULL
);

CREATE TABLE refunds (
    id             text   PRIMARY KEY,
    account        text   NOT NULL,
    payment_intent text   NOT NULL REFERENCES payment_intents (id),
    amount         bigint NOT NULL CHECK (amount > 0),
    currency       text   NOT NULL,
    reason         text,
    metadata       jsonb  NOT NULL DEFAULT '{}',
    created        bigint NOT NULL
);
