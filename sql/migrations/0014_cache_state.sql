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
