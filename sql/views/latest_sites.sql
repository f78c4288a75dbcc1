-- latest_sites: each domain's row from its newest snapshot.
CREATE OR REPLACE VIEW latest_sites AS
SELECT *
FROM sites
QUALIFY row_number() OVER (PARTITION BY domain ORDER BY snapshot_month DESC) = 1;

COMMENT ON VIEW latest_sites IS 'Each watchlist domain''s sites row from its newest snapshot (one row per domain ever loaded). Same columns as sites.';
COMMENT ON COLUMN latest_sites.snapshot_month IS 'Newest snapshot holding this domain (YYYY-MM).';
COMMENT ON COLUMN latest_sites.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN latest_sites.requested_url IS 'As sites.requested_url: the domain echoed by the API.';
COMMENT ON COLUMN latest_sites.snapshot_date IS 'As sites.snapshot_date: the API''s snapshot date (DATE); show it to readers.';
COMMENT ON COLUMN latest_sites.data_coverage IS 'As sites.data_coverage: coverage label from the API.';
COMMENT ON COLUMN latest_sites.title IS 'As sites.title.';
COMMENT ON COLUMN latest_sites.description IS 'As sites.description; NULL when not returned.';
COMMENT ON COLUMN latest_sites.category_slug IS 'As sites.category_slug: category path joined by /.';
COMMENT ON COLUMN latest_sites.category_name IS 'As sites.category_name: category path joined by " > ".';
COMMENT ON COLUMN latest_sites.favicon_url IS 'As sites.favicon_url (URL).';
COMMENT ON COLUMN latest_sites.screenshot_desktop_url IS 'As sites.screenshot_desktop_url (URL).';
COMMENT ON COLUMN latest_sites.screenshot_mobile_url IS 'As sites.screenshot_mobile_url (URL).';
COMMENT ON COLUMN latest_sites.is_small_site IS 'As sites.is_small_site.';
COMMENT ON COLUMN latest_sites.is_from_google_analytics IS 'As sites.is_from_google_analytics.';
COMMENT ON COLUMN latest_sites.is_data_from_ga IS 'As sites.is_data_from_ga: true = analytics data; false or NULL = traffic values are estimates.';
COMMENT ON COLUMN latest_sites.global_rank IS 'As sites.global_rank: worldwide rank, 1 = most visited.';
COMMENT ON COLUMN latest_sites.country_code IS 'As sites.country_code: ISO alpha-2 country of country_rank.';
COMMENT ON COLUMN latest_sites.country_rank IS 'As sites.country_rank.';
COMMENT ON COLUMN latest_sites.category_rank IS 'As sites.category_rank.';
COMMENT ON COLUMN latest_sites.pages_per_visit IS 'As sites.pages_per_visit: pages per visit (estimate).';
COMMENT ON COLUMN latest_sites.bounce_rate IS 'As sites.bounce_rate: decimal share 0-1 (estimate).';
COMMENT ON COLUMN latest_sites.average_visit_duration_seconds IS 'As sites.average_visit_duration_seconds: seconds (estimate).';
COMMENT ON COLUMN latest_sites.traffic_period IS 'As sites.traffic_period: reporting period of the traffic figures (YYYY-MM).';
COMMENT ON COLUMN latest_sites.ai_total_visits IS 'As sites.ai_total_visits: AI-referred visits (count, estimate).';
COMMENT ON COLUMN latest_sites.ai_global_traffic_share IS 'As sites.ai_global_traffic_share: decimal share 0-1 (estimate).';
COMMENT ON COLUMN latest_sites.total_visits IS 'As sites.total_visits: visits in the period (count, estimate unless is_data_from_ga).';
COMMENT ON COLUMN latest_sites.fetched_at IS 'As sites.fetched_at (TIMESTAMP, UTC).';
