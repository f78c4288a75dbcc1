-- Trino (Hive connector, catalog `hive`) tables over the objects `sitewatch publish` writes.
-- Generated from schema/flatten and publish.RunHealthTables by `go test ./pipeline/publish -run TestDDL -update`; do not edit.
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

CREATE TABLE IF NOT EXISTS hive.sitewatch.runs (
  "run_id" varchar,
  "started_at" timestamp(6),
  "finished_at" timestamp(6),
  "status" varchar,
  "domains_total" integer,
  "domains_loaded" integer,
  "domains_rejected" integer,
  "requests" integer,
  "credits_spent" integer,
  "credits_remaining" bigint,
  "rate_limited" integer,
  "message" varchar,
  "credits_by_source" varchar,
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/runs',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'runs', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.fetch_errors (
  "run_id" varchar,
  "domain" varchar,
  "endpoint" varchar,
  "http_status" integer,
  "code" varchar,
  "message" varchar,
  "occurred_at" timestamp(6),
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/fetch_errors',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'fetch_errors', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.quality_checks (
  "check" varchar,
  "table_name" varchar,
  "domain" varchar,
  "observed" varchar,
  "expected" varchar,
  "severity" varchar,
  "observed_value" double,
  "checked_at" timestamp(6),
  "snapshot_month" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/quality_checks',
  partitioned_by = ARRAY['snapshot_month']
);
CALL hive.system.sync_partition_metadata('sitewatch', 'quality_checks', 'FULL');

CREATE TABLE IF NOT EXISTS hive.sitewatch.countries (
  "alpha2" varchar,
  "alpha3" varchar,
  "numeric" varchar,
  "name" varchar
) WITH (
  format = 'PARQUET',
  external_location = 's3://BUCKET/PREFIX/countries'
);

-- complete_months: the months whose latest finished run left every watchlist domain loaded or
-- rejected by the API, each with the complete month before it (the warehouse's view of the same name).
CREATE OR REPLACE VIEW hive.sitewatch.complete_months AS
WITH latest AS (
  SELECT * FROM (
    SELECT r.*, row_number() OVER (PARTITION BY r.snapshot_month ORDER BY r.started_at DESC, r.run_id DESC) AS rn
    FROM hive.sitewatch.runs r
    WHERE r.status NOT IN ('running', 'month_mismatch')
  ) ranked
  WHERE rn = 1
), loaded AS (
  SELECT snapshot_month, count(*) AS n FROM hive.sitewatch.sites GROUP BY snapshot_month
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
