-- Back to basic composition for every dataset. A 'pld' dataset then checks
-- its budget by the sums of its charges (spent_epsilon, spent_delta), which
-- are at least what PLD composition spent: stricter, never looser.
ALTER TABLE releases DROP COLUMN mechanism;
ALTER TABLE datasets DROP COLUMN accounting;
