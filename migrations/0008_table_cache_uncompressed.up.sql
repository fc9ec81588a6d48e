-- table_cache values are stored uncompressed (issue 37). PostgreSQL's default
-- (EXTENDED) compressed them with pglz, which saves little on tables of
-- float64s (MLE chunks, estimator tables) and costs a decompression on every
-- read: about 100 ms for 6 MB of rows, more than reading them uncompressed.
-- The cache's bound counts uncompressed bytes already. Values stored before
-- keep their form until evicted.
ALTER TABLE table_cache ALTER COLUMN data SET STORAGE EXTERNAL;
