-- Data-quality findings per snapshot (Warehouse.RunQualityChecks). A check never blocks
-- loading: the findings are data about the data. Every check that ran and found nothing leaves
-- one 'ok' row per table it covers, so "checked and clean" differs from "never checked".
-- "check" is a reserved word in SQL: quote it ("check") in queries.

CREATE TABLE quality_checks (
    snapshot_month VARCHAR NOT NULL,
    "check"        VARCHAR NOT NULL,
    table_name     VARCHAR NOT NULL,
    domain         VARCHAR,
    observed       VARCHAR NOT NULL,
    expected       VARCHAR NOT NULL,
    severity       VARCHAR NOT NULL,   -- error | warn | ok
    observed_value DOUBLE,
    checked_at     TIMESTAMP NOT NULL
);

COMMENT ON TABLE quality_checks IS 'Data-quality findings per snapshot, replaced whole each time the checks run on the snapshot (after every load or rebuild). One row per check, table and offending domain; a check and table with nothing to report has one ok row with domain NULL. Checks never block loading. Quote the column "check" in SQL.';
COMMENT ON COLUMN quality_checks.snapshot_month IS 'Snapshot checked (YYYY-MM).';
COMMENT ON COLUMN quality_checks."check" IS 'Check name: channel_share_sum, geography_share_sum, share_range, history_contiguous, duplicate_keys, visits_nonnegative, ai_share_range, ai_share_sum or visits_jump (see the data dictionary for each rule and threshold). A reserved word: write "check" in SQL.';
COMMENT ON COLUMN quality_checks.table_name IS 'Table the check read (sites, sources_share, geography_share, traffic_history, ...).';
COMMENT ON COLUMN quality_checks.domain IS 'Normalized watchlist domain the finding is about; NULL on an ok row (the whole snapshot passed).';
COMMENT ON COLUMN quality_checks.observed IS 'What was found, as text in the unit of the check (e.g. 1.0712 for a share sum, or "months 2025-01..2025-12, 1 missing").';
COMMENT ON COLUMN quality_checks.expected IS 'What the check requires, e.g. "1 ± 0.02" or "contiguous, ending 2025-12".';
COMMENT ON COLUMN quality_checks.severity IS 'error = a hard rule broken (values out of range, duplicate keys), warn = suspicious (a share sum off, a history gap, a visits jump), ok = checked, nothing found.';
COMMENT ON COLUMN quality_checks.observed_value IS 'The observed figure as a number for sorting and thresholds (a sum, a count, a ratio); NULL when the finding is not one number.';
COMMENT ON COLUMN quality_checks.checked_at IS 'When the checks ran (TIMESTAMP, UTC).';
