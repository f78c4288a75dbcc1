-- Issue 44 (`changes` at 100,000 domains): the lists of the latest complete month against the
-- complete month before it, computed once when the month completes instead of at every read.
-- A month's rows are written once and read many times; computing the movers and the four lists
-- took about 13 s of CPU at each `changes` and each report. The rows are a cache: they are used
-- only while the rows of every table they were computed from are unchanged
-- (changes_cached_sources: per table and month, the row count and an order-free checksum),
-- else the read computes them from the views as before, so they can never make a list differ.
-- A writer's open, the end of a run and `rebuild` fill them (pipeline/warehouse/changescache.go).
-- Only the latest complete month is kept: `changes --snapshot` of an older month or `--against`
-- computes from the views.
CREATE TABLE IF NOT EXISTS changes_cached_movers (
    snapshot_month VARCHAR NOT NULL,
    previous_month VARCHAR NOT NULL,
    domain VARCHAR,
    metric VARCHAR,
    channel VARCHAR,
    previous_value DOUBLE,
    current_value DOUBLE,
    change DOUBLE,
    change_ratio DOUBLE,
    improved BOOLEAN,
    mover_rank BIGINT
);

CREATE TABLE IF NOT EXISTS changes_cached_competitors (
    snapshot_month VARCHAR NOT NULL,
    previous_month VARCHAR NOT NULL,
    domain VARCHAR,
    change VARCHAR,
    competitor VARCHAR,
    competitor_position INTEGER,
    competitor_global_rank BIGINT,
    competitor_total_visits DOUBLE,
    competitor_on_watchlist BOOLEAN
);

CREATE TABLE IF NOT EXISTS changes_cached_ai_platforms (
    snapshot_month VARCHAR NOT NULL,
    previous_month VARCHAR NOT NULL,
    domain VARCHAR,
    change VARCHAR,
    platform VARCHAR,
    rank BIGINT,
    share_pct DOUBLE
);

CREATE TABLE IF NOT EXISTS changes_cached_keywords (
    snapshot_month VARCHAR NOT NULL,
    previous_month VARCHAR NOT NULL,
    domain VARCHAR,
    change VARCHAR,
    keyword VARCHAR,
    position INTEGER,
    search_volume BIGINT,
    estimated_value_usd DOUBLE
);

CREATE TABLE IF NOT EXISTS changes_cached_top_countries (
    snapshot_month VARCHAR NOT NULL,
    previous_month VARCHAR NOT NULL,
    domain VARCHAR,
    change VARCHAR,
    country_code VARCHAR,
    country_name VARCHAR,
    position BIGINT,
    previous_position BIGINT,
    share DOUBLE,
    previous_share DOUBLE
);

CREATE TABLE IF NOT EXISTS changes_cached_sources (
    snapshot_month VARCHAR NOT NULL,
    previous_month VARCHAR NOT NULL,
    source_table VARCHAR NOT NULL,
    source_month VARCHAR NOT NULL,
    row_count BIGINT NOT NULL,
    checksum UBIGINT NOT NULL
);

COMMENT ON TABLE changes_cached_movers IS 'Derived cache of sitewatch changes (not part of the data): the latest complete month''s largest moves against the complete month before it, 5 per metric among the moves that changed (changes_movers_top). Used only while changes_cached_sources matches the tables; query changes_movers instead.';
COMMENT ON TABLE changes_cached_competitors IS 'Derived cache of sitewatch changes (not part of the data): changes_competitors of the latest complete month. Used only while changes_cached_sources matches the tables; query changes_competitors instead.';
COMMENT ON TABLE changes_cached_ai_platforms IS 'Derived cache of sitewatch changes (not part of the data): changes_ai_platforms of the latest complete month. Used only while changes_cached_sources matches the tables; query changes_ai_platforms instead.';
COMMENT ON TABLE changes_cached_keywords IS 'Derived cache of sitewatch changes (not part of the data): changes_keywords of the latest complete month. Used only while changes_cached_sources matches the tables; query changes_keywords instead.';
COMMENT ON TABLE changes_cached_top_countries IS 'Derived cache of sitewatch changes (not part of the data): changes_top_countries of the latest complete month. Used only while changes_cached_sources matches the tables; query changes_top_countries instead.';
COMMENT ON TABLE changes_cached_sources IS 'What the changes_cached_* rows were computed from: per table and month read, its row count and an order-free checksum of the columns the lists read (changes_cache_sources). A mismatch makes sitewatch changes compute the lists from the views again.';
COMMENT ON COLUMN changes_cached_movers.snapshot_month IS 'Complete snapshot (YYYY-MM) compared.';
COMMENT ON COLUMN changes_cached_movers.previous_month IS 'The complete snapshot before it (YYYY-MM) it is compared with.';
COMMENT ON COLUMN changes_cached_movers.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN changes_cached_movers.metric IS 'As changes_movers.metric.';
COMMENT ON COLUMN changes_cached_movers.channel IS 'Channel of a channel_share row; NULL for the other metrics.';
COMMENT ON COLUMN changes_cached_movers.previous_value IS 'Value in previous_month, in the metric''s unit (estimates).';
COMMENT ON COLUMN changes_cached_movers.current_value IS 'Value in snapshot_month, in the metric''s unit (estimates).';
COMMENT ON COLUMN changes_cached_movers.change IS 'current_value - previous_value in the metric''s unit (never 0 here).';
COMMENT ON COLUMN changes_cached_movers.change_ratio IS 'current_value / previous_value - 1 as a decimal; NULL when previous_value is 0.';
COMMENT ON COLUMN changes_cached_movers.improved IS 'As changes_movers.improved.';
COMMENT ON COLUMN changes_cached_movers.mover_rank IS 'Rank among the month''s moves of the metric that changed, 1 = most important (1 to 5).';
COMMENT ON COLUMN changes_cached_competitors.snapshot_month IS 'As changes_competitors.snapshot_month.';
COMMENT ON COLUMN changes_cached_competitors.previous_month IS 'As changes_competitors.previous_month.';
COMMENT ON COLUMN changes_cached_competitors.domain IS 'As changes_competitors.domain.';
COMMENT ON COLUMN changes_cached_competitors.change IS 'As changes_competitors.change.';
COMMENT ON COLUMN changes_cached_competitors.competitor IS 'As changes_competitors.competitor.';
COMMENT ON COLUMN changes_cached_competitors.competitor_position IS 'As changes_competitors.competitor_position.';
COMMENT ON COLUMN changes_cached_competitors.competitor_global_rank IS 'As changes_competitors.competitor_global_rank.';
COMMENT ON COLUMN changes_cached_competitors.competitor_total_visits IS 'As changes_competitors.competitor_total_visits (count, estimate).';
COMMENT ON COLUMN changes_cached_competitors.competitor_on_watchlist IS 'As changes_competitors.competitor_on_watchlist.';
COMMENT ON COLUMN changes_cached_ai_platforms.snapshot_month IS 'As changes_ai_platforms.snapshot_month.';
COMMENT ON COLUMN changes_cached_ai_platforms.previous_month IS 'As changes_ai_platforms.previous_month.';
COMMENT ON COLUMN changes_cached_ai_platforms.domain IS 'As changes_ai_platforms.domain.';
COMMENT ON COLUMN changes_cached_ai_platforms.change IS 'As changes_ai_platforms.change.';
COMMENT ON COLUMN changes_cached_ai_platforms.platform IS 'As changes_ai_platforms.platform.';
COMMENT ON COLUMN changes_cached_ai_platforms.rank IS 'As changes_ai_platforms.rank.';
COMMENT ON COLUMN changes_cached_ai_platforms.share_pct IS 'As changes_ai_platforms.share_pct (percent 0-100).';
COMMENT ON COLUMN changes_cached_keywords.snapshot_month IS 'As changes_keywords.snapshot_month.';
COMMENT ON COLUMN changes_cached_keywords.previous_month IS 'As changes_keywords.previous_month.';
COMMENT ON COLUMN changes_cached_keywords.domain IS 'As changes_keywords.domain.';
COMMENT ON COLUMN changes_cached_keywords.change IS 'As changes_keywords.change.';
COMMENT ON COLUMN changes_cached_keywords.keyword IS 'As changes_keywords.keyword.';
COMMENT ON COLUMN changes_cached_keywords.position IS 'As changes_keywords.position.';
COMMENT ON COLUMN changes_cached_keywords.search_volume IS 'As changes_keywords.search_volume (searches per month, estimate).';
COMMENT ON COLUMN changes_cached_keywords.estimated_value_usd IS 'As changes_keywords.estimated_value_usd (US dollars, estimate).';
COMMENT ON COLUMN changes_cached_top_countries.snapshot_month IS 'As changes_top_countries.snapshot_month.';
COMMENT ON COLUMN changes_cached_top_countries.previous_month IS 'As changes_top_countries.previous_month.';
COMMENT ON COLUMN changes_cached_top_countries.domain IS 'As changes_top_countries.domain.';
COMMENT ON COLUMN changes_cached_top_countries.change IS 'As changes_top_countries.change.';
COMMENT ON COLUMN changes_cached_top_countries.country_code IS 'As changes_top_countries.country_code.';
COMMENT ON COLUMN changes_cached_top_countries.country_name IS 'As changes_top_countries.country_name.';
COMMENT ON COLUMN changes_cached_top_countries.position IS 'As changes_top_countries.position.';
COMMENT ON COLUMN changes_cached_top_countries.previous_position IS 'As changes_top_countries.previous_position.';
COMMENT ON COLUMN changes_cached_top_countries.share IS 'As changes_top_countries.share (decimal 0-1).';
COMMENT ON COLUMN changes_cached_top_countries.previous_share IS 'As changes_top_countries.previous_share (decimal 0-1).';
COMMENT ON COLUMN changes_cached_sources.snapshot_month IS 'The month of the changes_cached_* rows this describes (YYYY-MM).';
COMMENT ON COLUMN changes_cached_sources.previous_month IS 'The month they compare it with (YYYY-MM).';
COMMENT ON COLUMN changes_cached_sources.source_table IS 'A table the lists read: sites, sources_share, similar_sites, ai_platforms, keywords, geography_share, or countries.';
COMMENT ON COLUMN changes_cached_sources.source_month IS 'The snapshot of that table read (snapshot_month or previous_month; empty for countries).';
COMMENT ON COLUMN changes_cached_sources.row_count IS 'Rows of source_table in source_month when the lists were computed (count).';
COMMENT ON COLUMN changes_cached_sources.checksum IS 'bit_xor of hash() of the columns the lists read over those rows: with row_count, tells whether the table changed since.';
