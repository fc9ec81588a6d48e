-- table_cache becomes a bounded least-recently-used cache (PWSD_TABLE_CACHE_BYTES):
-- each table's size and last use are kept so that the oldest can be evicted.
ALTER TABLE table_cache
    ADD COLUMN size      bigint      NOT NULL DEFAULT 0,
    ADD COLUMN last_used timestamptz NOT NULL DEFAULT now();
UPDATE table_cache SET size = octet_length(data), last_used = created_at;
CREATE INDEX table_cache_last_used ON table_cache (last_used);

-- Streams no longer keep their exact event count (with one event per user it is the
-- count pan-privacy protects): erase the counts already stored. Counters keep theirs
-- (the number of steps is the public time of continual observation).
UPDATE states SET events = 0 WHERE kind = 'stream';
