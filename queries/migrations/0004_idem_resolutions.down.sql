DROP TABLE IF EXISTS idem_resolutions;
