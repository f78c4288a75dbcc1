-- Column and table comments for every table of 0001_tables.sql: meaning, unit and scale.
-- `sitewatch schema` and docs/data-dictionary.md are generated from these (duckdb_columns()).
-- Scales: shares in sources_share and geography_share are decimals 0-1 (0.0208 = 2.08%);
-- AI platform shares are percent 0-100 exactly as the API returns them. Traffic figures are
-- estimates unless sites.is_data_from_ga is true.

COMMENT ON TABLE schema_migrations IS 'Migrations applied to this warehouse, one row per migration file.';
COMMENT ON COLUMN schema_migrations.name IS 'Migration file name, e.g. migrations/0001_tables.sql.';
COMMENT ON COLUMN schema_migrations.applied_at IS 'When the migration was applied (TIMESTAMP, database clock).';

COMMENT ON TABLE raw_responses IS 'Every successful API response body exactly as received; derived tables are rebuilt from it by `sitewatch rebuild`. Never contains API keys.';
COMMENT ON COLUMN raw_responses.snapshot_month IS 'Snapshot the response belongs to (YYYY-MM).';
COMMENT ON COLUMN raw_responses.domain IS 'Normalized watchlist domain; empty string for country-metadata.';
COMMENT ON COLUMN raw_responses.endpoint IS 'Operation called: site-overview, site-similar or country-metadata.';
COMMENT ON COLUMN raw_responses.fetched_at IS 'When the response was received (TIMESTAMP, UTC).';
COMMENT ON COLUMN raw_responses.body IS 'Response body exactly as received, compressed as body_encoding says (BLOB); sitewatch rebuild and Warehouse.RawBody decompress it.';
COMMENT ON COLUMN raw_responses.body_encoding IS 'Compression of body: zstd (the default) or identity (stored as received).';

COMMENT ON TABLE sites IS 'One row per snapshot and watchlist domain: the site overview (and similar-sites header) flattened. Traffic figures are estimates unless is_data_from_ga is true.';
COMMENT ON COLUMN sites.snapshot_month IS 'Snapshot (YYYY-MM): the month the run fetched for.';
COMMENT ON COLUMN sites.domain IS 'Normalized watchlist domain (lower case, no www., punycode).';
COMMENT ON COLUMN sites.requested_url IS 'meta.request.url: the domain as echoed by the API.';
COMMENT ON COLUMN sites.snapshot_date IS 'meta.snapshot_date: date of the data snapshot as stated by the API (DATE); show it to readers.';
COMMENT ON COLUMN sites.data_coverage IS 'meta.data_coverage: coverage label from the API (''complete'' is the one documented value).';
COMMENT ON COLUMN sites.title IS 'website.title: site title.';
COMMENT ON COLUMN sites.description IS 'website.description: site description; NULL when not returned.';
COMMENT ON COLUMN sites.category_slug IS 'website.category.slug: category path, lower case, segments joined by /.';
COMMENT ON COLUMN sites.category_name IS 'website.category.name: category path, segments joined by " > ".';
COMMENT ON COLUMN sites.favicon_url IS 'website.images.favicon_url (URL).';
COMMENT ON COLUMN sites.screenshot_desktop_url IS 'website.images.screenshot_desktop_url (URL).';
COMMENT ON COLUMN sites.screenshot_mobile_url IS 'website.images.screenshot_mobile_url (URL).';
COMMENT ON COLUMN sites.is_small_site IS 'website.flags.is_small_site: the API flags the site as small (estimates less reliable).';
COMMENT ON COLUMN sites.is_from_google_analytics IS 'website.flags.is_from_google_analytics: site data comes from a connected analytics account.';
COMMENT ON COLUMN sites.is_data_from_ga IS 'traffic.is_data_from_ga: true = traffic values come from an analytics source; false or NULL = traffic values are estimates.';
COMMENT ON COLUMN sites.global_rank IS 'rankings.global.rank: worldwide rank, 1 = most visited; NULL when not ranked.';
COMMENT ON COLUMN sites.country_code IS 'rankings.country.country_code: ISO 3166-1 alpha-2 code of the country of country_rank.';
COMMENT ON COLUMN sites.country_rank IS 'rankings.country.rank: rank within country_code, 1 = most visited.';
COMMENT ON COLUMN sites.category_rank IS 'rankings.category.rank: rank within category_slug, 1 = most visited.';
COMMENT ON COLUMN sites.pages_per_visit IS 'traffic.engagement.pages_per_visit: pages per visit (average, estimate).';
COMMENT ON COLUMN sites.bounce_rate IS 'traffic.engagement.bounce_rate: decimal share 0-1 of single-page visits (estimate).';
COMMENT ON COLUMN sites.average_visit_duration_seconds IS 'traffic.engagement.average_visit_duration_seconds: seconds per visit (average, estimate).';
COMMENT ON COLUMN sites.traffic_period IS 'traffic.period: the reporting period the traffic figures describe (YYYY-MM); show it to readers.';
COMMENT ON COLUMN sites.ai_total_visits IS 'ai_referrals.total_visits: visits referred by AI assistants in the period (count, estimate).';
COMMENT ON COLUMN sites.ai_global_traffic_share IS 'ai_referrals.global_traffic_share: decimal share 0-1 of the site''s traffic referred by AI assistants (estimate).';
COMMENT ON COLUMN sites.total_visits IS 'traffic.total_visits of the similar-sites response: visits in the period (count, estimate unless is_data_from_ga; may have decimals).';
COMMENT ON COLUMN sites.fetched_at IS 'When the overview was fetched (TIMESTAMP, UTC).';

COMMENT ON TABLE traffic_history IS 'Monthly visits per domain as listed by each snapshot (traffic.history). Months repeat across snapshots and may be revised: use the traffic_monthly view for one value per month.';
COMMENT ON COLUMN traffic_history.snapshot_month IS 'Snapshot the history was returned in (YYYY-MM).';
COMMENT ON COLUMN traffic_history.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN traffic_history.month IS 'Month the visits are for (DATE, first day of the month).';
COMMENT ON COLUMN traffic_history.visits IS 'Visits in that month (count, estimate unless sites.is_data_from_ga).';

COMMENT ON TABLE sources_share IS 'Traffic by channel (traffic.sources_share), one row per snapshot, domain and channel.';
COMMENT ON COLUMN sources_share.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN sources_share.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN sources_share.channel IS 'Channel: direct, organic_search, paid_search, organic_social, paid_social, email, referrals, generative_ai, affiliate or display_ads.';
COMMENT ON COLUMN sources_share.share IS 'Decimal share 0-1 of the domain''s visits from this channel, as returned (0.0208 = 2.08%); 0 = none.';

COMMENT ON TABLE geography_share IS 'Traffic by visitor country (traffic.geography_share), one row per snapshot, domain and country.';
COMMENT ON COLUMN geography_share.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN geography_share.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN geography_share.country_code IS 'ISO 3166-1 alpha-2 country code (join countries.alpha2).';
COMMENT ON COLUMN geography_share.share IS 'Decimal share 0-1 of the domain''s visits from this country, as returned.';

COMMENT ON TABLE keywords IS 'Top SEO keywords (seo.top_keywords), one row per snapshot, domain and keyword.';
COMMENT ON COLUMN keywords.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN keywords.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN keywords.position IS 'Position in the response list, 1-based.';
COMMENT ON COLUMN keywords.keyword IS 'Search keyword as returned.';
COMMENT ON COLUMN keywords.search_volume IS 'Monthly search volume of the keyword (searches per month, estimate).';
COMMENT ON COLUMN keywords.cpc_usd IS 'Cost per click in US dollars (estimate); NULL when not returned.';
COMMENT ON COLUMN keywords.estimated_value_usd IS 'Estimated value of the keyword''s traffic to the domain in US dollars (estimate).';

COMMENT ON TABLE ai_platforms IS 'AI assistants referring visits (ai_referrals.platforms), one row per snapshot, domain and platform.';
COMMENT ON COLUMN ai_platforms.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN ai_platforms.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN ai_platforms.platform IS 'Platform host name, e.g. chatgpt.com.';
COMMENT ON COLUMN ai_platforms.rank IS 'Platform rank for this domain, 1-based (1 = largest share).';
COMMENT ON COLUMN ai_platforms.share_pct IS 'Percent 0-100 as returned: the platform''s share of the domain''s AI-referred visits (not rescaled; divide by 100 for a decimal).';

COMMENT ON TABLE ai_platform_history IS 'Monthly share history per AI platform (ai_referrals.platforms[].history), one row per snapshot, domain, platform and month.';
COMMENT ON COLUMN ai_platform_history.snapshot_month IS 'Snapshot the history was returned in (YYYY-MM).';
COMMENT ON COLUMN ai_platform_history.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN ai_platform_history.platform IS 'Platform host name.';
COMMENT ON COLUMN ai_platform_history.month IS 'Month the share is for (DATE, first day of the month).';
COMMENT ON COLUMN ai_platform_history.share_pct IS 'Percent 0-100 as returned: the platform''s share of the domain''s AI-referred visits in that month.';

COMMENT ON TABLE ai_prompts IS 'Top AI prompts leading to the domain (ai_referrals.top_prompts), one row per snapshot, domain and prompt.';
COMMENT ON COLUMN ai_prompts.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN ai_prompts.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN ai_prompts.position IS 'Position in the response list, 1-based.';
COMMENT ON COLUMN ai_prompts.prompt IS 'Prompt text as returned.';

COMMENT ON TABLE similar_sites IS 'Similar or competing sites (site-similar similar_sites[]), one row per snapshot, domain and similar domain.';
COMMENT ON COLUMN similar_sites.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN similar_sites.domain IS 'Normalized watchlist domain the list is for.';
COMMENT ON COLUMN similar_sites.position IS 'Position in the response list, 1-based (the API returns no similarity score).';
COMMENT ON COLUMN similar_sites.similar_domain IS 'The similar site''s domain as returned.';
COMMENT ON COLUMN similar_sites.title IS 'The similar site''s title.';
COMMENT ON COLUMN similar_sites.description IS 'The similar site''s description; NULL when not returned.';
COMMENT ON COLUMN similar_sites.global_rank IS 'The similar site''s worldwide rank, 1 = most visited; NULL when not ranked.';
COMMENT ON COLUMN similar_sites.country_code IS 'ISO 3166-1 alpha-2 code of the similar site''s country_rank.';
COMMENT ON COLUMN similar_sites.country_name IS 'Country name as returned with the rank.';
COMMENT ON COLUMN similar_sites.country_rank IS 'The similar site''s rank within country_code.';
COMMENT ON COLUMN similar_sites.category_slug IS 'The similar site''s category path (may be mixed case or NULL).';
COMMENT ON COLUMN similar_sites.category_rank IS 'The similar site''s rank within its category.';
COMMENT ON COLUMN similar_sites.total_visits IS 'The similar site''s visits in the period (count, estimate; may have decimals).';
COMMENT ON COLUMN similar_sites.favicon_url IS 'Favicon URL.';
COMMENT ON COLUMN similar_sites.screenshot_desktop_url IS 'Desktop screenshot URL.';
COMMENT ON COLUMN similar_sites.screenshot_mobile_url IS 'Mobile screenshot URL.';

COMMENT ON TABLE site_tags IS 'Site tags (site-similar website.tags), one row per snapshot, domain and tag.';
COMMENT ON COLUMN site_tags.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN site_tags.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN site_tags.tag IS 'Tag text as returned.';

COMMENT ON TABLE countries IS 'ISO 3166-1 country reference (country-metadata), one row per country; replaced whole on each load.';
COMMENT ON COLUMN countries.alpha2 IS 'ISO 3166-1 alpha-2 code, e.g. US.';
COMMENT ON COLUMN countries.alpha3 IS 'ISO 3166-1 alpha-3 code, e.g. USA.';
COMMENT ON COLUMN countries.numeric IS 'ISO 3166-1 numeric code as text, leading zeros kept, e.g. 004.';
COMMENT ON COLUMN countries.name IS 'Country name as returned.';

COMMENT ON TABLE runs IS 'One row per `sitewatch run` (or scheduled run): what it loaded and what it cost.';
COMMENT ON COLUMN runs.run_id IS 'Run identifier.';
COMMENT ON COLUMN runs.snapshot_month IS 'Snapshot the run fetched (YYYY-MM).';
COMMENT ON COLUMN runs.started_at IS 'Start time (TIMESTAMP, UTC).';
COMMENT ON COLUMN runs.finished_at IS 'End time (TIMESTAMP, UTC); NULL while running or if the process died.';
COMMENT ON COLUMN runs.status IS 'running, complete, stopped_credits, failed, unauthorized or interrupted.';
COMMENT ON COLUMN runs.domains_total IS 'Watchlist domains in the plan (count).';
COMMENT ON COLUMN runs.domains_loaded IS 'Domains loaded by this run (count).';
COMMENT ON COLUMN runs.domains_rejected IS 'Domains rejected by the API with 400 (count).';
COMMENT ON COLUMN runs.requests IS 'HTTP requests sent, retries included (count).';
COMMENT ON COLUMN runs.credits_spent IS 'Credits charged by the API during the run (count).';
COMMENT ON COLUMN runs.credits_remaining IS 'Wallet balance reported by the last response (X-Gateway-Remaining-Credits).';
COMMENT ON COLUMN runs.rate_limited IS 'Responses with 429 Too Many Requests (count).';
COMMENT ON COLUMN runs.message IS 'Human-readable outcome or error of the run.';

COMMENT ON TABLE fetch_errors IS 'One row per domain and endpoint that failed in a run (HTTP or decode errors).';
COMMENT ON COLUMN fetch_errors.run_id IS 'Run that hit the error (runs.run_id).';
COMMENT ON COLUMN fetch_errors.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN fetch_errors.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN fetch_errors.endpoint IS 'Operation: site-overview, site-similar or country-metadata.';
COMMENT ON COLUMN fetch_errors.http_status IS 'HTTP status code; NULL for network errors.';
COMMENT ON COLUMN fetch_errors.code IS 'Error code from the body (e.g. INVALID_DOMAIN) or the status title.';
COMMENT ON COLUMN fetch_errors.message IS 'Error message (never contains keys).';
COMMENT ON COLUMN fetch_errors.occurred_at IS 'When the error happened (TIMESTAMP, UTC).';
