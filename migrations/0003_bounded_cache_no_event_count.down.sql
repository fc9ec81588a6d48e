-- The erased stream event counts cannot be restored.
DROP INDEX IF EXISTS table_cache_last_used;
ALTER TABLE table_cache DROP COLUMN IF EXISTS last_used, DROP COLUMN IF EXISTS size;
