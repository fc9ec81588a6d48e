-- Tight privacy accounting (docs/accounting.md). A dataset composes its
-- releases by basic composition (adding epsilons and deltas) or by privacy
-- loss distributions ('pld'). Every dataset stored before this migration
-- keeps basic accounting, so no stored budget changes meaning.
ALTER TABLE datasets ADD COLUMN accounting text NOT NULL DEFAULT 'basic'
    CHECK (accounting IN ('basic', 'pld'));

-- Each charge records the mechanism it was composed as. Releases stored
-- before this migration were charged by their (epsilon, delta) only: the
-- generic pair of that (epsilon, delta) is their sound PLD.
ALTER TABLE releases ADD COLUMN mechanism text NOT NULL DEFAULT 'generic'
    CHECK (mechanism IN ('generic', 'laplace'));
