DROP INDEX IF EXISTS states_legacy_config;
DROP INDEX IF EXISTS samples_legacy_header;
UPDATE sample_chunks SET data = substring(data FROM 2);
