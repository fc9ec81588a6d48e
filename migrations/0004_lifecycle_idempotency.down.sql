DROP TABLE idempotency_keys;
DROP INDEX states_listing;
DROP INDEX datasets_listing;
DROP INDEX samples_expiry;
DROP INDEX samples_listing;
ALTER TABLE samples DROP COLUMN expires_at;
