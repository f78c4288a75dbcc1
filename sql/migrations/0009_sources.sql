-- Issue 28 (several credit sources): every charged answer names the source that paid for it.
ALTER TABLE run_calls ADD COLUMN source VARCHAR;

COMMENT ON COLUMN run_calls.source IS 'Credit source that paid for the answer (a name from api.sources, or the mode, direct or marketplace, of a single-source config); NULL for answers recorded before sources were named.';
