-- Retention: a sample past expires_at is not found and is purged; NULL keeps it forever.
ALTER TABLE samples ADD COLUMN expires_at timestamptz;
CREATE INDEX samples_listing ON samples (created_at, id);
CREATE INDEX samples_expiry ON samples (expires_at) WHERE expires_at IS NOT NULL;

CREATE INDEX datasets_listing ON datasets (created_at, name);
CREATE INDEX states_listing ON states (kind, created_at, id);

-- Idempotency keys. key is a digest of the caller's token and its
-- Idempotency-Key header; request_hash a digest of the request (method, path,
-- query, media types, body). Only the answer is kept (status, the headers that
-- matter, body): never a request body. done is false while the first request
-- with the key runs; locked_until bounds how long a duplicate waits for it.
CREATE TABLE idempotency_keys (
    key          text PRIMARY KEY,
    done         boolean NOT NULL DEFAULT false,
    request_hash bytea,
    status       integer NOT NULL DEFAULT 0,
    header       jsonb NOT NULL DEFAULT '{}',
    body         bytea NOT NULL DEFAULT '',
    -- ref is the Location of the resource the first request created, so that
    -- deleting the resource also removes its answer here.
    ref          text,
    created_at   timestamptz NOT NULL,
    locked_until timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_ref ON idempotency_keys (ref) WHERE ref IS NOT NULL;
