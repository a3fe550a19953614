-- idemgen runtime: the secret that authenticates this database's entries in
-- the engine's cache (idem.Config.Cache, runtime/idemredis).
--
-- One row, made here from PostgreSQL's strong random source (two version 4
-- UUIDs: 244 random bits). An engine reads it once, at start-up, and
-- derives from it, the database's system identifier and its name a MAC key
-- and the namespace of its cache keys (docs/security.md): an entry it
-- caches opens only for the same tenant, operation and key in a database
-- with the same secret, so Redis can lose or withhold an outcome but not
-- forge one, and two databases sharing one Redis never read each other's
-- entries.
--
-- A logical copy (pg_dump and restore into another cluster) gets another
-- system identifier, hence other keys. A physical copy (a volume snapshot,
-- a standby promoted to serve another deployment) keeps all three: give it
-- a secret of its own before it shares a Redis with the original, and
-- restart its services:
--   UPDATE idem_cache_secret SET secret = uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), created_at = now();
-- The same statement rotates the secret: entries written under the old one
-- are then misses, served from the records.
CREATE TABLE idem_cache_secret (
    one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
    secret     bytea       NOT NULL CHECK (length(secret) >= 16),
    created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO idem_cache_secret (secret) VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));
