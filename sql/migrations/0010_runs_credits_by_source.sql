-- Issue 28 (several credit sources): every run says which source paid what.
ALTER TABLE runs ADD COLUMN credits_by_source VARCHAR;

COMMENT ON COLUMN runs.credits_by_source IS 'Credits each credit source was charged during the run, as a JSON object in spend order, e.g. {"marketplace":100,"direct":201} (names from api.sources, or the mode of a single-source config; the values add up to credits_spent); NULL for runs recorded before sources were attributed. Query with json_extract(credits_by_source, ''$.direct'').';
COMMENT ON COLUMN runs.credits_remaining IS 'Credits left as the last responses reported: the wallet balance (X-Gateway-Remaining-Credits), or with several sources the sum of what each reported left (wallets and marketplace quotas).';
