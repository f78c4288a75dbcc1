-- Issue 44 (show DOMAIN at 100,000 domains): the watchlist-wide half of the rank, AI and channel
-- reasons, computed once per complete month instead of at every read. A one-domain question
-- (`sitewatch show`) reads its own rows, but "unusual" for these reasons is measured against the
-- month's moves of every domain: 100,000 rank and AI moves and 1 million channel-share moves
-- and their medians, most of show's cost. Like attention_visit_steps, the rows are a cache: a
-- month is used only while the sites and sources_share rows it was computed from are unchanged
-- (attention_month_stat_sources), else computed at the read, so they can never make a list
-- differ. The view file repeats these statements with IF NOT EXISTS for the BI file's DuckDB.
CREATE TABLE IF NOT EXISTS attention_month_stats (
    snapshot_month VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    channel VARCHAR,
    med DOUBLE,
    mad DOUBLE
);

CREATE TABLE IF NOT EXISTS attention_month_stat_sources (
    snapshot_month VARCHAR NOT NULL,
    source_table VARCHAR NOT NULL,
    source_month VARCHAR NOT NULL,
    row_count BIGINT NOT NULL,
    checksum UBIGINT NOT NULL
);

COMMENT ON TABLE attention_month_stats IS 'Derived cache of needs_attention (not part of the data): per complete month, the median (med) and 1.4826 × MAD (mad) of the watchlist''s moves against the previous complete month: global_rank (log rank ratio), ai_visits (log ratio) and channel_share per channel (share change). Used only while attention_month_stat_sources matches sites and sources_share; query needs_attention instead.';
COMMENT ON TABLE attention_month_stat_sources IS 'What each month of attention_month_stats was computed from: per month, for sites and sources_share of the month and of the previous complete month, the row count and an order-free checksum. A mismatch makes the read compute the month again.';
COMMENT ON COLUMN attention_month_stats.snapshot_month IS 'Complete snapshot (YYYY-MM) the row is for.';
COMMENT ON COLUMN attention_month_stats.metric IS 'global_rank, ai_visits or channel_share.';
COMMENT ON COLUMN attention_month_stats.channel IS 'The channel of a channel_share row (a key of sources_share); NULL otherwise.';
COMMENT ON COLUMN attention_month_stats.med IS 'Median move of the month''s domains (log units for global_rank and ai_visits, share 0-1 for channel_share).';
COMMENT ON COLUMN attention_month_stats.mad IS '1.4826 × the median absolute deviation of the moves from med, before the reason''s floor.';
COMMENT ON COLUMN attention_month_stat_sources.snapshot_month IS 'The month of attention_month_stats this describes (YYYY-MM).';
COMMENT ON COLUMN attention_month_stat_sources.source_table IS 'sites or sources_share.';
COMMENT ON COLUMN attention_month_stat_sources.source_month IS 'The month itself or its previous complete month.';
COMMENT ON COLUMN attention_month_stat_sources.row_count IS 'Rows of source_table in source_month when the month was computed (0 when none).';
COMMENT ON COLUMN attention_month_stat_sources.checksum IS 'bit_xor of a hash of the columns the statistics read, over those rows (0 when none).';
