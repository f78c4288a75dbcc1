-- Issue 11 (every run's fate recorded) and issue 12 (refresh pairs from one attempt).
--
-- run_calls is the per-call ledger: one row per answer the server charged, written in the same
-- transaction as the raw body it paid for (or alone, for a charged body that was refused). A run
-- killed mid-way is later closed as 'abandoned' with its requests and credits counted from here,
-- so the spend of a run does not depend on the process living to write its summary.
CREATE TABLE run_calls (
    run_id VARCHAR NOT NULL,
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    endpoint VARCHAR NOT NULL,
    http_status INTEGER NOT NULL,
    credits BIGINT NOT NULL,
    fetched_at TIMESTAMP NOT NULL,
    outcome VARCHAR NOT NULL
);

-- raw_responses.run_id: the run that fetched the body. With `run --refresh` a domain's pair is
-- loaded only when both bodies come from the same run. NULL for bodies stored before 0003.
ALTER TABLE raw_responses ADD COLUMN run_id VARCHAR;

COMMENT ON TABLE run_calls IS 'Ledger of charged API answers: one row per answer the server charged, committed with the body it paid for. Abandoned runs are counted from it.';
COMMENT ON COLUMN run_calls.run_id IS 'Run that made the call (runs.run_id).';
COMMENT ON COLUMN run_calls.snapshot_month IS 'Snapshot the answer was fetched for (YYYY-MM).';
COMMENT ON COLUMN run_calls.domain IS 'Normalized watchlist domain; empty string for country-metadata.';
COMMENT ON COLUMN run_calls.endpoint IS 'Operation called: site-overview, site-similar or country-metadata.';
COMMENT ON COLUMN run_calls.http_status IS 'HTTP status of the charged answer (200 for every charged answer of the API as specified).';
COMMENT ON COLUMN run_calls.credits IS 'Credits the server charged for the answer (X-Gateway-Credit-Cost; count).';
COMMENT ON COLUMN run_calls.fetched_at IS 'When the answer was received (TIMESTAMP, UTC).';
COMMENT ON COLUMN run_calls.outcome IS 'What became of the answer: stored (body stored; its domain loaded when both bodies are in), unloadable (body stored, the domain''s rows cannot be derived), refused (body not stored: undecodable, legacy v1, schema drift, or it contained a secret), or another reason the caller names.';
COMMENT ON COLUMN raw_responses.run_id IS 'Run that fetched the body (runs.run_id); NULL for bodies stored before the ledger existed or by callers without a run.';
