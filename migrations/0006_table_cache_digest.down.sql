-- Back to text keys; tables whose parameters do not fit a btree index row are
-- dropped (a cache: they are recomputed on demand).
CREATE TABLE table_cache_by_key (
    key        text PRIMARY KEY,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    size       bigint NOT NULL DEFAULT 0,
    last_used  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO table_cache_by_key (key, data, created_at, size, last_used)
    SELECT convert_from(params, 'UTF8'), data, created_at, octet_length(data), last_used FROM table_cache WHERE octet_length(params) <= 2000 AND position('\x00'::bytea IN params) = 0;
DROP TABLE table_cache;
ALTER TABLE table_cache_by_key RENAME TO table_cache;
ALTER INDEX table_cache_by_key_pkey RENAME TO table_cache_pkey;
CREATE INDEX table_cache_last_used ON table_cache (last_used);
