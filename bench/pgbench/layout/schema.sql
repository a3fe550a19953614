-- Tables of the record-layout comparison (layout.sh): the same record in
-- the layouts measured for issue 25. idem_records itself (v2) comes from
-- the migrations.
CREATE TABLE bench_payments (id bigserial PRIMARY KEY, idempotency_key text,
    amount bigint NOT NULL, currency text NOT NULL, reference text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE bench_payments2 (LIKE bench_payments INCLUDING ALL);
-- v2 without its expiry index.
CREATE TABLE rec_v2_noexp (LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE rec_v2_noexp ADD PRIMARY KEY (tenant, operation, idempotency_key);
-- v3 candidates: a fixed-width hash of (tenant, operation, key) as the
-- primary key, the readable triple kept but not indexed.
CREATE TABLE rec_h16 (id bytea PRIMARY KEY, LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CREATE TABLE rec_u16 (id uuid PRIMARY KEY, LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CREATE TABLE rec_h32 (id bytea PRIMARY KEY, LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CREATE TABLE rec_h16_brin (id bytea PRIMARY KEY, LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CREATE INDEX ON rec_h16_brin USING brin (expires_at);
CREATE TABLE rec_h16_incl (LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS, id bytea NOT NULL);
ALTER TABLE rec_h16_incl ADD PRIMARY KEY (id) INCLUDE (expires_at);
-- Partitions by expiry (one per hour here). A unique constraint on a
-- partitioned table must include the partition key, so the primary key is
-- (id, expires_at): uniqueness of the key alone is lost (partition_dup.sql).
CREATE TABLE rec_part (id uuid NOT NULL, LIKE idem_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, expires_at)) PARTITION BY RANGE (expires_at);
DO $$
BEGIN
    FOR h IN 0..48 LOOP
        EXECUTE format('CREATE TABLE rec_part_%s PARTITION OF rec_part FOR VALUES FROM (%L) TO (%L)', h,
            date_trunc('hour', now()) + h * interval '1 hour', date_trunc('hour', now()) + (h + 1) * interval '1 hour');
    END LOOP;
END $$;
-- What keeps uniqueness with partitions: a narrow table of keys beside
-- them, itself to be expired.
CREATE TABLE rec_part_keys (id uuid PRIMARY KEY, expires_at timestamptz NOT NULL);
