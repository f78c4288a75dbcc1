-- Whether the stored lists (attention_*, changes_cached_*) were refreshed after the last write
-- to the tables they are computed from. Every commit of a sitewatch writer that changes data
-- sets it false in the same transaction; a complete refresh sets it true. A writer's open then
-- refreshes only when the last writer left them behind (killed, upgraded, a restore's new file,
-- other list settings),
-- and the end of a run that wrote nothing refreshes nothing: the stored lists' own checksums
-- still decide at every read whether they are used (pipeline/warehouse/cachestate.go).
-- settings: the list settings (min_visits/threshold) the refresh stored, so that a writer given
-- other settings stores theirs.
CREATE TABLE IF NOT EXISTS cache_state (
    fresh BOOLEAN NOT NULL,
    settings VARCHAR NOT NULL
);
INSERT INTO cache_state SELECT false, '' WHERE NOT EXISTS (SELECT 1 FROM cache_state);

-- The worth-tracking list of `changes` and the report (discover's ranking of the latest complete
-- month, its first 100 candidates for each size floor a writer keeps): at 100,000 domains the
-- ranking was 3 s and most of the memory of a `changes` whose other lists are stored. Unlike
-- those it has no checksums (it reads every month's similar sites and rejections): a reader
-- uses it only while the file's lists mark says nothing was written since the writer stored it
-- (pipeline/warehouse/listsmark.go), and every refresh after a write stores it again.
CREATE TABLE IF NOT EXISTS changes_cached_candidates (
    snapshot_month VARCHAR NOT NULL,
    floor_visits BIGINT NOT NULL,
    discover_rank BIGINT NOT NULL,
    candidate VARCHAR,
    title VARCHAR,
    category_slug VARCHAR,
    global_rank BIGINT,
    total_visits DOUBLE,
    country_code VARCHAR,
    watched_by BIGINT,
    watched_total BIGINT,
    previous_watched_by BIGINT,
    listed_by VARCHAR,
    reach DOUBLE,
    score DOUBLE,
    is_new BOOLEAN,
    is_rising BOOLEAN,
    reason VARCHAR
);

COMMENT ON TABLE cache_state IS 'Bookkeeping of sitewatch (not part of the data): one row saying whether the stored lists (attention_*, changes_cached_*) were refreshed after the last write to the tables they are computed from.';
COMMENT ON COLUMN cache_state.fresh IS 'True when a refresh completed after the last data-changing commit of a sitewatch writer; every such commit sets it false.';
COMMENT ON COLUMN cache_state.settings IS 'The needs-attention list settings the last refresh stored, min_visits/threshold; separated and ended by semicolons.';
COMMENT ON TABLE changes_cached_candidates IS 'Derived cache of sitewatch changes and the report (not part of the data): the first 100 rows of discover_candidates_in for the latest complete month, per size floor a writer keeps. Read only while the warehouse file is as the writer that stored them left it; query discover_candidates instead.';
COMMENT ON COLUMN changes_cached_candidates.snapshot_month IS 'The latest complete month when stored (YYYY-MM).';
COMMENT ON COLUMN changes_cached_candidates.floor_visits IS 'The size floor the ranking was computed with (discover.min_visits; default 5000).';
COMMENT ON COLUMN changes_cached_candidates.discover_rank IS 'Place in discover_candidates_in at that floor, 1 = best.';
COMMENT ON COLUMN changes_cached_candidates.candidate IS 'Candidate domain as the similar-sites answers spell it.';
COMMENT ON COLUMN changes_cached_candidates.title IS 'Its site title, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.category_slug IS 'Its category, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.global_rank IS 'Its global rank, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.total_visits IS 'Its estimated monthly visits, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.country_code IS 'Its main country, ISO 3166-1 alpha-2, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.watched_by IS 'How many watched domains list it as similar in the month.';
COMMENT ON COLUMN changes_cached_candidates.watched_total IS 'How many watched domains the month holds.';
COMMENT ON COLUMN changes_cached_candidates.previous_watched_by IS 'How many listed it in the complete month before (NULL when none).';
COMMENT ON COLUMN changes_cached_candidates.listed_by IS 'The watched domains that list it, as discover_candidates gives them.';
COMMENT ON COLUMN changes_cached_candidates.reach IS 'Share of the watchlist listing it, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.score IS 'The ranking score, as discover_candidates gives it.';
COMMENT ON COLUMN changes_cached_candidates.is_new IS 'True when no earlier month listed it.';
COMMENT ON COLUMN changes_cached_candidates.is_rising IS 'True when more watched domains list it than the month before.';
COMMENT ON COLUMN changes_cached_candidates.reason IS 'Why it is worth tracking, in words.';
