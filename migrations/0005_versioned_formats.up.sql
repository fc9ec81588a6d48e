-- Stored formats become explicit and versioned.
-- Every sample chunk starts with its format version (store.ChunkFormat = 1);
-- the element layout after it is unchanged.
UPDATE sample_chunks SET data = '\x01'::bytea || data;

-- Streams keep no event count (as in 0003; rows written since by older binaries
-- are zeroed again).
UPDATE states SET events = 0 WHERE kind = 'stream';

-- Sample headers, stream and counter configurations and the streams' binary
-- state are rewritten to their versioned shapes by pwsd itself at start-up
-- (service.RewriteStoredFormats): rows still in the previous shapes carry no
-- "format" key, which this index finds.
CREATE INDEX samples_legacy_header ON samples (id) WHERE NOT (header ? 'format');
CREATE INDEX states_legacy_config ON states (kind, id) WHERE NOT (config ? 'format');
