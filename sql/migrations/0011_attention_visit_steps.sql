-- Issue 44 (needs attention at 100,000 domains): the per-domain half of the visits reasons,
-- computed once per complete month instead of at every read. needs_attention_all spent most of
-- its time grouping every traffic_history row into (domain, month) values and self-joining
-- consecutive months; history rows are written once a month and read many times. The rows are
-- a cache: each month is used only while the history it was computed from is unchanged
-- (attention_visit_sources), else recomputed at the read, so they can never make a list
-- differ. A writer's open, the end of a run and `rebuild` fill them (sql/views/needs_attention.sql
-- says how). The view file repeats these statements with IF NOT EXISTS for the BI file's DuckDB.
CREATE TABLE IF NOT EXISTS attention_visit_steps (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    visits DOUBLE,
    prev_visits DOUBLE,
    center DOUBLE,
    n BIGINT,
    mad DOUBLE
);

CREATE TABLE IF NOT EXISTS attention_visit_sources (
    snapshot_month VARCHAR NOT NULL,
    source_month VARCHAR NOT NULL,
    row_count BIGINT NOT NULL,
    checksum UBIGINT NOT NULL
);

COMMENT ON TABLE attention_visit_steps IS 'Derived cache of needs_attention (not part of the data): per complete month and domain, the month''s visits and the month before''s (traffic history merged across snapshots up to the month, newest first) with the median (center), count (n) and 1.4826 × MAD (mad) of its earlier monthly log changes. Used only while attention_visit_sources matches the history; query needs_attention instead.';
COMMENT ON TABLE attention_visit_sources IS 'What each month of attention_visit_steps was computed from: per month and each of the 26 snapshots its history reads, that snapshot''s traffic_history row count and an order-free checksum. A mismatch makes the read compute the month from the history again.';
COMMENT ON COLUMN attention_visit_steps.snapshot_month IS 'Complete snapshot (YYYY-MM) the row is for.';
COMMENT ON COLUMN attention_visit_steps.domain IS 'Normalized domain with a visits figure for the month and the month before.';
COMMENT ON COLUMN attention_visit_steps.visits IS 'Visits in the month (whole visits; traffic history up to the month, newest snapshot with a value wins); NULL when every snapshot''s value is NULL.';
COMMENT ON COLUMN attention_visit_steps.prev_visits IS 'Visits in the calendar month before, same rule.';
COMMENT ON COLUMN attention_visit_steps.center IS 'Median of the domain''s earlier monthly log changes ln(v_m / v_m-1), up to 24 before the month; NULL when none.';
COMMENT ON COLUMN attention_visit_steps.n IS 'How many earlier monthly changes center and mad are measured over (count); NULL when none.';
COMMENT ON COLUMN attention_visit_steps.mad IS '1.4826 × the median absolute deviation of those changes from center (log units, before the 0.02 floor); NULL when none.';
COMMENT ON COLUMN attention_visit_sources.snapshot_month IS 'The month of attention_visit_steps this describes (YYYY-MM).';
COMMENT ON COLUMN attention_visit_sources.source_month IS 'One of the 26 snapshots the month''s history reads (the month and the 25 before it).';
COMMENT ON COLUMN attention_visit_sources.row_count IS 'traffic_history rows of source_month when the month was computed (0 when none).';
COMMENT ON COLUMN attention_visit_sources.checksum IS 'bit_xor of hash(domain, month, visits) over those rows (0 when none): with row_count, tells whether the history changed since.';
