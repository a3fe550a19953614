DROP TABLE IF EXISTS idem_records;
