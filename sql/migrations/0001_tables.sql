-- The warehouse tables (README.md, "The warehouse"; docs/data-dictionary.md). Names are final:
-- add columns in a new migration, never rename or drop one. No primary keys: DuckDB 1.1 checks
-- them eagerly, which breaks the delete-then-insert that replaces a (snapshot_month, domain) as
-- one unit.

CREATE TABLE raw_responses (
    snapshot_month VARCHAR NOT NULL,   -- YYYY-MM
    domain         VARCHAR NOT NULL,   -- normalized watchlist domain; '' for country-metadata
    endpoint       VARCHAR NOT NULL,   -- site-overview | site-similar | country-metadata
    fetched_at     TIMESTAMP NOT NULL, -- UTC
    -- The response body exactly as received, compressed as body_encoding says ('zstd'): about
    -- 4x smaller, and DuckDB 1.1 pins a 256 KB buffer for every string over 4 KB it scans, so
    -- uncompressed bodies made a rebuild's memory grow with the warehouse.
    body           BLOB NOT NULL,
    body_encoding  VARCHAR NOT NULL    -- zstd | identity
);

CREATE TABLE sites (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    requested_url VARCHAR,
    snapshot_date DATE,
    data_coverage VARCHAR,
    title VARCHAR,
    description VARCHAR,
    category_slug VARCHAR,
    category_name VARCHAR,
    favicon_url VARCHAR,
    screenshot_desktop_url VARCHAR,
    screenshot_mobile_url VARCHAR,
    is_small_site BOOLEAN,
    is_from_google_analytics BOOLEAN,
    is_data_from_ga BOOLEAN,
    global_rank BIGINT,
    country_code VARCHAR,
    country_rank BIGINT,
    category_rank BIGINT,
    pages_per_visit DOUBLE,
    bounce_rate DOUBLE,
    average_visit_duration_seconds DOUBLE,
    traffic_period VARCHAR,
    ai_total_visits BIGINT,
    ai_global_traffic_share DOUBLE,
    total_visits DOUBLE,
    fetched_at TIMESTAMP
);

CREATE TABLE traffic_history (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    month DATE NOT NULL,
    visits BIGINT
);

CREATE TABLE sources_share (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    channel VARCHAR NOT NULL,
    share DOUBLE
);

CREATE TABLE geography_share (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    country_code VARCHAR NOT NULL,
    share DOUBLE
);

CREATE TABLE keywords (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    keyword VARCHAR NOT NULL,
    search_volume BIGINT,
    cpc_usd DOUBLE,
    estimated_value_usd DOUBLE
);

CREATE TABLE ai_platforms (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    platform VARCHAR NOT NULL,
    rank BIGINT,
    share_pct DOUBLE
);

CREATE TABLE ai_platform_history (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    platform VARCHAR NOT NULL,
    month DATE NOT NULL,
    share_pct DOUBLE
);

CREATE TABLE ai_prompts (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    prompt VARCHAR NOT NULL
);

CREATE TABLE similar_sites (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    similar_domain VARCHAR NOT NULL,
    title VARCHAR,
    description VARCHAR,
    global_rank BIGINT,
    country_code VARCHAR,
    country_name VARCHAR,
    country_rank BIGINT,
    category_slug VARCHAR,
    category_rank BIGINT,
    total_visits DOUBLE,
    favicon_url VARCHAR,
    screenshot_desktop_url VARCHAR,
    screenshot_mobile_url VARCHAR
);

CREATE TABLE site_tags (
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    tag VARCHAR NOT NULL
);

CREATE TABLE countries (
    alpha2 VARCHAR NOT NULL,
    alpha3 VARCHAR NOT NULL,
    numeric VARCHAR NOT NULL,
    name VARCHAR NOT NULL
);

CREATE TABLE runs (
    run_id VARCHAR NOT NULL,
    snapshot_month VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    status VARCHAR NOT NULL,          -- running | complete | stopped_credits | failed | unauthorized | interrupted
    domains_total INTEGER,
    domains_loaded INTEGER,
    domains_rejected INTEGER,
    requests INTEGER,
    credits_spent INTEGER,
    credits_remaining BIGINT,
    rate_limited INTEGER,
    message VARCHAR
);

CREATE TABLE fetch_errors (
    run_id VARCHAR NOT NULL,
    snapshot_month VARCHAR NOT NULL,
    domain VARCHAR NOT NULL,
    endpoint VARCHAR NOT NULL,
    http_status INTEGER,
    code VARCHAR,
    message VARCHAR,
    occurred_at TIMESTAMP
);
