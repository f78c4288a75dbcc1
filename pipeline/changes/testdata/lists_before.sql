-- The changes_competitors_in, changes_ai_platforms_in, changes_keywords_in and
-- changes_top_countries_in macros as they were before the rewrite of issue 44 (sql/views/changes.sql
-- at 6d4eff7), renamed *_before: TestListsSameAsBefore compares each with its rewrite.

CREATE OR REPLACE MACRO changes_competitors_before(against := NULL) AS TABLE
WITH pairs AS (
    SELECT snapshot_month, previous_month FROM change_pairs(against)
),
both_months AS MATERIALIZED (
    SELECT p.snapshot_month, p.previous_month, s.domain
    FROM pairs p
    JOIN sites s ON s.snapshot_month = p.snapshot_month
    JOIN sites o ON o.snapshot_month = p.previous_month AND o.domain = s.domain
),
comp AS MATERIALIZED (
    SELECT snapshot_month, domain,
           regexp_replace(rtrim(lower(similar_domain), '.'), '^www\.', '') AS competitor,
           min(position) AS position,
           arg_min(global_rank, position) AS global_rank,
           arg_min(total_visits, position) AS total_visits
    FROM similar_sites
    GROUP BY 1, 2, 3
),
diff AS (
    SELECT b.snapshot_month, b.previous_month, b.domain, 'new' AS change, c.*  EXCLUDE (snapshot_month, domain)
    FROM both_months b
    JOIN comp c ON c.snapshot_month = b.snapshot_month AND c.domain = b.domain
    WHERE NOT EXISTS (SELECT 1 FROM comp o WHERE o.snapshot_month = b.previous_month AND o.domain = b.domain AND o.competitor = c.competitor)
    UNION ALL
    SELECT b.snapshot_month, b.previous_month, b.domain, 'dropped', o.* EXCLUDE (snapshot_month, domain)
    FROM both_months b
    JOIN comp o ON o.snapshot_month = b.previous_month AND o.domain = b.domain
    WHERE NOT EXISTS (SELECT 1 FROM comp c WHERE c.snapshot_month = b.snapshot_month AND c.domain = b.domain AND c.competitor = o.competitor)
)
SELECT
    d.snapshot_month,
    d.previous_month,
    d.domain,
    d.change,
    d.competitor,
    d.position AS competitor_position,
    d.global_rank AS competitor_global_rank,
    d.total_visits AS competitor_total_visits,
    w.domain IS NOT NULL AS competitor_on_watchlist
FROM diff d
LEFT JOIN sites w ON w.snapshot_month = d.snapshot_month AND w.domain = d.competitor;

CREATE OR REPLACE MACRO changes_ai_platforms_before(against := NULL) AS TABLE
WITH pairs AS (
    SELECT snapshot_month, previous_month FROM change_pairs(against)
),
both_months AS MATERIALIZED (
    SELECT p.snapshot_month, p.previous_month, s.domain
    FROM pairs p
    JOIN sites s ON s.snapshot_month = p.snapshot_month
    JOIN sites o ON o.snapshot_month = p.previous_month AND o.domain = s.domain
),
plat AS MATERIALIZED (
    SELECT snapshot_month, domain, lower(trim(platform)) AS platform,
           min(rank) AS rank, arg_min(share_pct, rank) AS share_pct
    FROM ai_platforms
    GROUP BY 1, 2, 3
)
SELECT b.snapshot_month, b.previous_month, b.domain, 'new' AS change, c.platform, c.rank, c.share_pct
FROM both_months b
JOIN plat c ON c.snapshot_month = b.snapshot_month AND c.domain = b.domain
WHERE NOT EXISTS (SELECT 1 FROM plat o WHERE o.snapshot_month = b.previous_month AND o.domain = b.domain AND o.platform = c.platform)
UNION ALL
SELECT b.snapshot_month, b.previous_month, b.domain, 'dropped', o.platform, o.rank, o.share_pct
FROM both_months b
JOIN plat o ON o.snapshot_month = b.previous_month AND o.domain = b.domain
WHERE NOT EXISTS (SELECT 1 FROM plat c WHERE c.snapshot_month = b.snapshot_month AND c.domain = b.domain AND c.platform = o.platform);

CREATE OR REPLACE MACRO changes_keywords_before(against := NULL) AS TABLE
WITH pairs AS (
    SELECT snapshot_month, previous_month FROM change_pairs(against)
),
both_months AS MATERIALIZED (
    SELECT p.snapshot_month, p.previous_month, s.domain
    FROM pairs p
    JOIN sites s ON s.snapshot_month = p.snapshot_month
    JOIN sites o ON o.snapshot_month = p.previous_month AND o.domain = s.domain
),
kw AS MATERIALIZED (
    SELECT snapshot_month, domain, lower(trim(keyword)) AS key,
           arg_min(keyword, position) AS keyword, min(position) AS position,
           arg_min(search_volume, position) AS search_volume,
           arg_min(estimated_value_usd, position) AS estimated_value_usd
    FROM keywords
    GROUP BY 1, 2, 3
)
SELECT b.snapshot_month, b.previous_month, b.domain, 'new' AS change, c.keyword, c.position, c.search_volume, c.estimated_value_usd
FROM both_months b
JOIN kw c ON c.snapshot_month = b.snapshot_month AND c.domain = b.domain
WHERE NOT EXISTS (SELECT 1 FROM kw o WHERE o.snapshot_month = b.previous_month AND o.domain = b.domain AND o.key = c.key)
UNION ALL
SELECT b.snapshot_month, b.previous_month, b.domain, 'dropped', o.keyword, o.position, o.search_volume, o.estimated_value_usd
FROM both_months b
JOIN kw o ON o.snapshot_month = b.previous_month AND o.domain = b.domain
WHERE NOT EXISTS (SELECT 1 FROM kw c WHERE c.snapshot_month = b.snapshot_month AND c.domain = b.domain AND c.key = o.key);

CREATE OR REPLACE MACRO changes_top_countries_before(against := NULL) AS TABLE
WITH pairs AS (
    SELECT snapshot_month, previous_month FROM change_pairs(against)
),
both_months AS MATERIALIZED (
    SELECT p.snapshot_month, p.previous_month, s.domain
    FROM pairs p
    JOIN sites s ON s.snapshot_month = p.snapshot_month
    JOIN sites o ON o.snapshot_month = p.previous_month AND o.domain = s.domain
),
ranked AS MATERIALIZED (
    SELECT snapshot_month, domain, upper(country_code) AS country_code, share,
           row_number() OVER (PARTITION BY snapshot_month, domain
                              ORDER BY share DESC NULLS LAST, upper(country_code)) AS position
    FROM geography_share
),
moves AS (
    SELECT b.snapshot_month, b.previous_month, b.domain, 'entered' AS change, c.country_code,
           c.position, o.position AS previous_position, c.share, o.share AS previous_share
    FROM both_months b
    JOIN ranked c ON c.snapshot_month = b.snapshot_month AND c.domain = b.domain AND c.position <= 5
    LEFT JOIN ranked o ON o.snapshot_month = b.previous_month AND o.domain = b.domain AND o.country_code = c.country_code
    WHERE o.position IS NULL OR o.position > 5
    UNION ALL
    SELECT b.snapshot_month, b.previous_month, b.domain, 'left', o.country_code,
           c.position, o.position, c.share, o.share
    FROM both_months b
    JOIN ranked o ON o.snapshot_month = b.previous_month AND o.domain = b.domain AND o.position <= 5
    LEFT JOIN ranked c ON c.snapshot_month = b.snapshot_month AND c.domain = b.domain AND c.country_code = o.country_code
    WHERE c.position IS NULL OR c.position > 5
)
SELECT m.snapshot_month, m.previous_month, m.domain, m.change, m.country_code, n.name AS country_name,
       m.position, m.previous_position, m.share, m.previous_share
FROM moves m
LEFT JOIN countries n ON n.alpha2 = m.country_code;
