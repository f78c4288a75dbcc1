-- Athena tables over the objects `sitewatch publish` writes.
-- Generated from schema/flatten and publish.RunHealthTables by `go test ./pipeline/publish -run TestDDL -update`; do not edit.
-- Replace s3://BUCKET/PREFIX with publish.url. Run MSCK REPAIR TABLE after each new month.
CREATE DATABASE IF NOT EXISTS sitewatch;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.sites (
  `domain` string,
  `requested_url` string,
  `snapshot_date` date,
  `data_coverage` string,
  `title` string,
  `description` string,
  `category_slug` string,
  `category_name` string,
  `favicon_url` string,
  `screenshot_desktop_url` string,
  `screenshot_mobile_url` string,
  `is_small_site` boolean,
  `is_from_google_analytics` boolean,
  `is_data_from_ga` boolean,
  `global_rank` bigint,
  `country_code` string,
  `country_rank` bigint,
  `category_rank` bigint,
  `pages_per_visit` double,
  `bounce_rate` double,
  `average_visit_duration_seconds` double,
  `traffic_period` string,
  `ai_total_visits` bigint,
  `ai_global_traffic_share` double,
  `total_visits` double,
  `fetched_at` timestamp
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/sites/';
MSCK REPAIR TABLE sitewatch.sites;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.traffic_history (
  `domain` string,
  `month` date,
  `visits` bigint
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/traffic_history/';
MSCK REPAIR TABLE sitewatch.traffic_history;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.sources_share (
  `domain` string,
  `channel` string,
  `share` double
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/sources_share/';
MSCK REPAIR TABLE sitewatch.sources_share;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.geography_share (
  `domain` string,
  `country_code` string,
  `share` double
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/geography_share/';
MSCK REPAIR TABLE sitewatch.geography_share;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.keywords (
  `domain` string,
  `position` int,
  `keyword` string,
  `search_volume` bigint,
  `cpc_usd` double,
  `estimated_value_usd` double
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/keywords/';
MSCK REPAIR TABLE sitewatch.keywords;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.ai_platforms (
  `domain` string,
  `platform` string,
  `rank` bigint,
  `share_pct` double
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/ai_platforms/';
MSCK REPAIR TABLE sitewatch.ai_platforms;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.ai_platform_history (
  `domain` string,
  `platform` string,
  `month` date,
  `share_pct` double
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/ai_platform_history/';
MSCK REPAIR TABLE sitewatch.ai_platform_history;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.ai_prompts (
  `domain` string,
  `position` int,
  `prompt` string
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/ai_prompts/';
MSCK REPAIR TABLE sitewatch.ai_prompts;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.similar_sites (
  `domain` string,
  `position` int,
  `similar_domain` string,
  `title` string,
  `description` string,
  `global_rank` bigint,
  `country_code` string,
  `country_name` string,
  `country_rank` bigint,
  `category_slug` string,
  `category_rank` bigint,
  `total_visits` double,
  `favicon_url` string,
  `screenshot_desktop_url` string,
  `screenshot_mobile_url` string
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/similar_sites/';
MSCK REPAIR TABLE sitewatch.similar_sites;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.site_tags (
  `domain` string,
  `tag` string
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/site_tags/';
MSCK REPAIR TABLE sitewatch.site_tags;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.runs (
  `run_id` string,
  `started_at` timestamp,
  `finished_at` timestamp,
  `status` string,
  `domains_total` int,
  `domains_loaded` int,
  `domains_rejected` int,
  `requests` int,
  `credits_spent` int,
  `credits_remaining` bigint,
  `rate_limited` int,
  `message` string,
  `credits_by_source` string
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/runs/';
MSCK REPAIR TABLE sitewatch.runs;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.fetch_errors (
  `run_id` string,
  `domain` string,
  `endpoint` string,
  `http_status` int,
  `code` string,
  `message` string,
  `occurred_at` timestamp
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/fetch_errors/';
MSCK REPAIR TABLE sitewatch.fetch_errors;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.quality_checks (
  `check` string,
  `table_name` string,
  `domain` string,
  `observed` string,
  `expected` string,
  `severity` string,
  `observed_value` double,
  `checked_at` timestamp
)
PARTITIONED BY (snapshot_month string)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/quality_checks/';
MSCK REPAIR TABLE sitewatch.quality_checks;

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.countries (
  `alpha2` string,
  `alpha3` string,
  `numeric` string,
  `name` string
)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/countries/';

-- complete_months: the months whose latest finished run left every watchlist domain loaded or
-- rejected by the API, each with the complete month before it (the warehouse's view of the same name).
CREATE OR REPLACE VIEW sitewatch.complete_months AS
WITH latest AS (
  SELECT * FROM (
    SELECT r.*, row_number() OVER (PARTITION BY r.snapshot_month ORDER BY r.started_at DESC, r.run_id DESC) AS rn
    FROM sitewatch.runs r
    WHERE r.status NOT IN ('running', 'month_mismatch')
  ) ranked
  WHERE rn = 1
), loaded AS (
  SELECT snapshot_month, count(*) AS n FROM sitewatch.sites GROUP BY snapshot_month
)
SELECT
  l.snapshot_month,
  lag(l.snapshot_month) OVER (ORDER BY l.snapshot_month) AS previous_month,
  l.run_id,
  l.status,
  l.finished_at,
  l.domains_total,
  l.domains_loaded,
  l.domains_rejected,
  coalesce(s.n, 0) AS domains_in_warehouse
FROM latest l
LEFT JOIN loaded s ON s.snapshot_month = l.snapshot_month
WHERE l.status IN ('complete', 'up_to_date')
   OR (l.domains_total > 0 AND coalesce(l.domains_loaded, 0) + coalesce(l.domains_rejected, 0) >= l.domains_total);
