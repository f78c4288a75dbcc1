-- Trino (Hive connector, catalog `hive`) tables over the objects `sitewatch publish` writes.
-- Generated from schema/flatten by `go test ./pipeline/publish -run TestDDL -update`; do not edit.
-- Replace s3://BUCKET/PREFIX with publish.url. Run sync_partition_metadata after each new month.
CREATE SCHEMA IF NOT EXISTS hive.sitewatch;

CREATE TABLE IF NOT EXISTS hive.sitewatch.sites (
  "domain" varchar,
  "requested_url" varchar,
  "snapshot_date" date,
  "data_coverage" varchar,
  "title" varchar,
  "description" varchar,
  "category_slug" varchar,
  "category_name" varchar,
  "favicon_url" varchar,
  "screenshot_desktop_url" varchar,
  "screenshot_mobile_url" varchar,
  "is_small_site" boolean,
  "is_from_google_analytics" boolean,
  "is_data_from_ga" boolean,
  "global_rank" bigint,
  "country_code" varchar,
  "country_rank" bigint,
  "category_rank" bigint,
  "pages_per_visit" double,
  "bounce_rate" double,
  "average_visit_duration_seconds" double,
  "traffic_period" varchar,
  "ai_total_visits" bigint,
  "ai_global_traffic_share" double,
  "total_visits" double,
  "fetched_at" timestamp(6),
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/sites',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'sites', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.traffic_history (
  "domain" varchar,
  "month" date,
  "visits" bigint,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/traffic_history',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'traffic_history', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.sources_share (
  "domain" varchar,
  "channel" varchar,
  "share" double,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/sources_share',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'sources_share', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.geography_share (
  "domain" varchar,
  "country_code" varchar,
  "share" double,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/geography_share',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'geography_share', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.keywords (
  "domain" varchar,
  "position" integer,
  "keyword" varchar,
  "search_volume" bigint,
  "cpc_usd" double,
  "estimated_value_usd" double,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/keywords',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'keywords', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.ai_platforms (
  "domain" varchar,
  "platform" varchar,
  "rank" bigint,
  "share_pct" double,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/ai_platforms',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'ai_platforms', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.ai_platform_history (
  "domain" varchar,
  "platform" varchar,
  "month" date,
  "share_pct" double,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/ai_platform_history',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'ai_platform_history', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.ai_prompts (
  "domain" varchar,
  "position" integer,
  "prompt" varchar,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/ai_prompts',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'ai_prompts', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.similar_sites (
  "domain" varchar,
  "position" integer,
  "similar_domain" varchar,
  "title" varchar,
  "description" varchar,
  "global_rank" bigint,
  "country_code" varchar,
  "country_name" varchar,
  "country_rank" bigint,
  "category_slug" varchar,
  "category_rank" bigint,
  "total_visits" double,
  "favicon_url" varchar,
  "screenshot_desktop_url" varchar,
  "screenshot_mobile_url" varchar,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/similar_sites',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'similar_sites', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.site_tags (
  "domain" varchar,
  "tag" varchar,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/site_tags',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'site_tags', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.countries (
  "alpha2" varchar,
  "alpha3" varchar,
  "numeric" varchar,
  "name" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/countries'
);
