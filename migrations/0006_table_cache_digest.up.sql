-- table_cache is keyed by the SHA-256 digest of a table's canonical parameters
-- (bounded: 32 bytes, whatever the parameters; a custom scheme of 10^5
-- probabilities passed the 8191-byte index-row limit as a text key). The
-- parameters themselves are kept beside the digest and compared on every read,
-- so that two parameter sets with one digest could never be confused.
CREATE TABLE table_cache_by_digest (
    digest     bytea PRIMARY KEY CHECK (octet_length(digest) = 32),
    params     bytea NOT NULL,
    data       bytea NOT NULL,
    size       bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO table_cache_by_digest (digest, params, data, size, created_at, last_used)
    SELECT sha256(convert_to(key, 'UTF8')), convert_to(key, 'UTF8'), data, octet_length(key) + octet_length(data), created_at, last_used FROM table_cache;
DROP TABLE table_cache;
ALTER TABLE table_cache_by_digest RENAME TO table_cache;
ALTER INDEX table_cache_by_digest_pkey RENAME TO table_cache_pkey;
CREATE INDEX table_cache_last_used ON table_cache (last_used);
