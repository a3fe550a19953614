-- idemgen runtime: transactional outbox and consumer inbox.
--
-- Portable SQL, like 0001: text states with CHECK constraints, no advisory
-- locks, no xmax or xid8. The relay's claim uses FOR UPDATE SKIP LOCKED. The
-- only PostgreSQL-specific piece is the NOTIFY trigger at the end, which only
-- wakes relays early; on an engine without LISTEN/NOTIFY, drop it and let the
-- relays poll.

-- One row per event waiting to be published (or kept after publication, or
-- dead-lettered). Written by events.Enqueue in the business transaction.
CREATE TABLE idem_outbox (
    tenant           text        NOT NULL,
    -- CloudEvents id: a UUIDv8 derived from (tenant, operation, idempotency
    -- key, ordinal), or the caller's own id for events enqueued outside an
    -- idempotent request.
    id               text        NOT NULL,
    -- Insertion order: the relay publishes in this order, and events of one
    -- aggregate strictly in this order.
    seq              bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    -- Events sharing (tenant, aggregate_key) are published one after the
    -- other; NULL means no ordering constraint.
    aggregate_key    text,
    -- The request that enqueued the event, and its position in it (1, 2, ...).
    operation        text,
    idempotency_key  text,
    ordinal          integer,
    event_type       text        NOT NULL,
    -- The CloudEvent, JSON-encoded (structured content mode), byte for byte
    -- what the publisher receives.
    event            bytea       NOT NULL,
    state            text        NOT NULL DEFAULT 'PENDING',
    -- Failed publish attempts so far.
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    published_at     timestamptz,
    PRIMARY KEY (tenant, id),
    CONSTRAINT idem_outbox_state_check CHECK (state IN ('PENDING', 'PUBLISHED', 'DEAD')),
    CONSTRAINT idem_outbox_published_check CHECK ((state = 'PUBLISHED') = (published_at IS NOT NULL)),
    CONSTRAINT idem_outbox_request_check CHECK (
        (operation IS NULL) = (idempotency_key IS NULL) AND (idempotency_key IS NULL) = (ordinal IS NULL))
);

-- The relay's claim walks pending events in insertion order.
CREATE INDEX idem_outbox_pending_idx ON idem_outbox (seq) WHERE state = 'PENDING';
-- "Is an earlier event of this aggregate still pending?"
CREATE INDEX idem_outbox_aggregate_idx ON idem_outbox (tenant, aggregate_key, seq)
    WHERE state = 'PENDING' AND aggregate_key IS NOT NULL;
-- Enqueue numbers a request's events: max(ordinal) for its key.
CREATE INDEX idem_outbox_request_idx ON idem_outbox (tenant, operation, idempotency_key, ordinal)
    WHERE idempotency_key IS NOT NULL;
-- The sweep of kept published events.
CREATE INDEX idem_outbox_published_idx ON idem_outbox (published_at) WHERE state = 'PUBLISHED';

-- One row per message a consumer has processed: written in the consumer's own
-- transaction, together with the handler's writes.
CREATE TABLE idem_inbox (
    consumer     text        NOT NULL,
    -- The message's key: a CloudEvent's source and id, or a webhook's
    -- Idempotency-Key.
    event_key    text        NOT NULL,
    -- SHA-256 of the message's content; same key with another fingerprint is
    -- a conflict, not a duplicate.
    fingerprint  bytea       NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_key),
    CONSTRAINT idem_inbox_fingerprint_check CHECK (octet_length(fingerprint) = 32)
);

CREATE INDEX idem_inbox_processed_at_idx ON idem_inbox (processed_at);

-- Wake-up for relays that LISTEN idem_outbox. One notification per
-- transaction at most: PostgreSQL folds identical notifications of a
-- transaction into one, delivered at commit (and never on rollback).
CREATE FUNCTION idem_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('idem_outbox', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER idem_outbox_notify AFTER INSERT ON idem_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION idem_outbox_notify();
