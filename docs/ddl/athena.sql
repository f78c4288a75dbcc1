-- Athena tables over the objects `sitewatch publish` writes.
-- Generated from schema/flatten by `go test ./pipeline/publish -run TestDDL -update`; do not edit.
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

CREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.countries (
  `alpha2` string,
  `alpha3` string,
  `numeric` string,
  `name` string
)
STORED AS PARQUET
LOCATION 's3://BUCKET/PREFIX/countries/';
