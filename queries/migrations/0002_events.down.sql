DROP TRIGGER IF EXISTS idem_outbox_notify ON idem_outbox;
DROP FUNCTION IF EXISTS idem_outbox_notify();
DROP TABLE IF EXISTS idem_inbox;
DROP TABLE IF EXISTS idem_outbox;
