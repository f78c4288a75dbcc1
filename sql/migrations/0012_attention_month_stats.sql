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

-- And each complete month's whole list (issue 44: the view, changes and show read rows instead
-- of computing them): used only while attention_list_sources matches every source the list
-- reads, so a stored list can never make a list differ either.
CREATE TABLE IF NOT EXISTS attention_lists (
    snapshot_month VARCHAR NOT NULL, floor_visits DOUBLE NOT NULL, z_min DOUBLE NOT NULL,
    previous_month VARCHAR, domain VARCHAR NOT NULL, kind VARCHAR NOT NULL, metric VARCHAR, channel VARCHAR,
    value DOUBLE, previous_value DOUBLE, change_pct DOUBLE, change_points DOUBLE, z DOUBLE,
    severity VARCHAR NOT NULL, reason VARCHAR NOT NULL, score DOUBLE, rank BIGINT, domain_rank BIGINT
);

CREATE TABLE IF NOT EXISTS attention_list_sources (
    snapshot_month VARCHAR NOT NULL, floor_visits DOUBLE NOT NULL, z_min DOUBLE NOT NULL,
    source_table VARCHAR NOT NULL, source_month VARCHAR NOT NULL, row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

COMMENT ON TABLE attention_lists IS 'Derived cache of needs_attention (not part of the data): each complete month''s whole list for the settings a writer stores (the defaults and the config''s attention settings), the view''s columns with min_visits and threshold as floor_visits and z_min. Used only while attention_list_sources matches the list''s sources now; query needs_attention instead.';
COMMENT ON TABLE attention_list_sources IS 'What each stored list of attention_lists was computed from: per month and settings, the row count and an order-free checksum of the 26 traffic_history snapshots, sites and sources_share of the month and the previous complete month, the month''s fetch_errors and quality_checks, and a definition row (previous complete month, stamp of the view definitions). A mismatch makes the read compute the month.';
COMMENT ON COLUMN attention_lists.snapshot_month IS 'Complete snapshot (YYYY-MM) of the list.';
COMMENT ON COLUMN attention_lists.floor_visits IS 'The size floor the list was computed with (needs_attention.min_visits).';
COMMENT ON COLUMN attention_lists.z_min IS 'The threshold the list was computed with (needs_attention.threshold).';
COMMENT ON COLUMN attention_lists.previous_month IS 'needs_attention.previous_month of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.domain IS 'needs_attention.domain of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.kind IS 'needs_attention.kind of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.metric IS 'needs_attention.metric of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.channel IS 'needs_attention.channel of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.value IS 'needs_attention.value of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.previous_value IS 'needs_attention.previous_value of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.change_pct IS 'needs_attention.change_pct of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.change_points IS 'needs_attention.change_points of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.z IS 'needs_attention.z of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.severity IS 'needs_attention.severity of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.reason IS 'needs_attention.reason of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.score IS 'needs_attention.score of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.rank IS 'needs_attention.rank of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_lists.domain_rank IS 'needs_attention.domain_rank of the stored row (same meaning and unit).';
COMMENT ON COLUMN attention_list_sources.snapshot_month IS 'The month of attention_lists this describes (YYYY-MM).';
COMMENT ON COLUMN attention_list_sources.floor_visits IS 'The size floor of the stored list.';
COMMENT ON COLUMN attention_list_sources.z_min IS 'The threshold of the stored list.';
COMMENT ON COLUMN attention_list_sources.source_table IS 'traffic_history, sites, sources_share, fetch_errors, quality_checks or definition.';
COMMENT ON COLUMN attention_list_sources.source_month IS 'The snapshot read (definition: the previous complete month, empty when none).';
COMMENT ON COLUMN attention_list_sources.row_count IS 'Rows of source_table in source_month when the list was stored (0 when none).';
COMMENT ON COLUMN attention_list_sources.checksum IS 'bit_xor of a hash of the columns the list reads, over those rows (0 when none); definition: hash of the views stamp.';
