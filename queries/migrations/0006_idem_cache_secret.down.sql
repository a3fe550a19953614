DROP TABLE IF EXISTS idem_cache_secret;
