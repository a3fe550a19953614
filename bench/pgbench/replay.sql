-- A replay's database work: the read by key.
\set k random(1, 2000000000)
SELECT state FROM idem_records WHERE id = idem_record_id('', 'createAtomic', 'r' || :k);
