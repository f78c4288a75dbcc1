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
