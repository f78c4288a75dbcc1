-- sitewatch BI views over the Parquet tree: one view per warehouse table, then every analyst
-- view of sql/views/, so a BI tool (or any DuckDB) queries the Parquet files exactly as it
-- would the warehouse, without ever holding the DuckDB file's lock.
--
-- Generated from the warehouse schema and sql/views/*.sql by
-- go test ./pipeline/warehouse -run TestBIViewsFileIsCurrent -update; do not edit by hand.
--
-- Usage: replace @PARQUET_ROOT@ by the Parquet directory (warehouse.parquet; absolute, so
-- the views work from anywhere), then run the file once into a small DuckDB file of views:
--
--   sed "s|@PARQUET_ROOT@|$PWD/data/parquet|g" sql/bi/parquet_views.sql | duckdb data/bi.duckdb
--
-- The views read the files at query time: new months appear without rerunning this. Every table
-- needs at least one file: a month exported by sitewatch has a file for every table.

CREATE OR REPLACE VIEW sites AS SELECT "snapshot_month", "domain", "requested_url", "snapshot_date", "data_coverage", "title", "description", "category_slug", "category_name", "favicon_url", "screenshot_desktop_url", "screenshot_mobile_url", "is_small_site", "is_from_google_analytics", "is_data_from_ga", "global_rank", "country_code", "country_rank", "category_rank", "pages_per_visit", "bounce_rate", "average_visit_duration_seconds", "traffic_period", "ai_total_visits", "ai_global_traffic_share", "total_visits", "fetched_at"
FROM read_parquet('@PARQUET_ROOT@/sites/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW traffic_history AS SELECT "snapshot_month", "domain", "month", "visits"
FROM read_parquet('@PARQUET_ROOT@/traffic_history/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW sources_share AS SELECT "snapshot_month", "domain", "channel", "share"
FROM read_parquet('@PARQUET_ROOT@/sources_share/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW geography_share AS SELECT "snapshot_month", "domain", "country_code", "share"
FROM read_parquet('@PARQUET_ROOT@/geography_share/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW keywords AS SELECT "snapshot_month", "domain", "position", "keyword", "search_volume", "cpc_usd", "estimated_value_usd"
FROM read_parquet('@PARQUET_ROOT@/keywords/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW ai_platforms AS SELECT "snapshot_month", "domain", "platform", "rank", "share_pct"
FROM read_parquet('@PARQUET_ROOT@/ai_platforms/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW ai_platform_history AS SELECT "snapshot_month", "domain", "platform", "month", "share_pct"
FROM read_parquet('@PARQUET_ROOT@/ai_platform_history/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW ai_prompts AS SELECT "snapshot_month", "domain", "position", "prompt"
FROM read_parquet('@PARQUET_ROOT@/ai_prompts/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW similar_sites AS SELECT "snapshot_month", "domain", "position", "similar_domain", "title", "description", "global_rank", "country_code", "country_name", "country_rank", "category_slug", "category_rank", "total_visits", "favicon_url", "screenshot_desktop_url", "screenshot_mobile_url"
FROM read_parquet('@PARQUET_ROOT@/similar_sites/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW site_tags AS SELECT "snapshot_month", "domain", "tag"
FROM read_parquet('@PARQUET_ROOT@/site_tags/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW runs AS SELECT "run_id", "snapshot_month", "started_at", "finished_at", "status", "domains_total", "domains_loaded", "domains_rejected", "requests", "credits_spent", "credits_remaining", "rate_limited", "message", "credits_by_source"
FROM read_parquet('@PARQUET_ROOT@/runs/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW fetch_errors AS SELECT "run_id", "snapshot_month", "domain", "endpoint", "http_status", "code", "message", "occurred_at"
FROM read_parquet('@PARQUET_ROOT@/fetch_errors/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

CREATE OR REPLACE VIEW quality_checks AS SELECT "snapshot_month", "check", "table_name", "domain", "observed", "expected", "severity", "observed_value", "checked_at"
FROM read_parquet('@PARQUET_ROOT@/quality_checks/*/*.parquet', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}, union_by_name = true);

-- countries has no partition: one file for the whole table.
CREATE OR REPLACE VIEW countries AS SELECT * FROM read_parquet('@PARQUET_ROOT@/countries/*.parquet');

-- ---- sql/views/_checksum.sql ----
-- rows_checksum(row_hash): an order-free checksum of a group's rows, for the sources of the
-- stored lists (changes_cache_sources, the attention_*_sources): a stored list is read only while
-- each source's row count and checksum are what they were when it was stored. Called as
-- rows_checksum(hash(a, b, c)) in place of an aggregate.
--
-- Why not bit_xor(hash(a, b, c)): DuckDB's hash() of several values XORs the last value's hash
-- into the mix of the others, so under bit_xor two rows whose last column moved alike cancel
-- (two countries of a domain both 0.175 -> 0.475: seed 699888 of TestStaleStoredListsNeverRead),
-- and so do two equal rows, whatever they hold. Here each row's hash is hashed again (a 64-bit
-- mix, not linear in XOR) and the terms are added modulo 2^64: a change goes unseen only by a
-- 64-bit coincidence. NULL over no rows, as bit_xor was.
CREATE OR REPLACE MACRO rows_checksum(row_hash) AS
    CAST(sum(hash(row_hash)) % 18446744073709551616 AS UBIGINT);

-- ---- sql/views/_format.sql ----
-- Number style of the words the views write (reasons), the same rules as pipeline/numfmt
-- (docs/report.md, "Number style"), so a reason reads like the report and the terminal:
--   fmt_count(n)  a count with 3 significant digits and a suffix: 950, 12.3k, 4.56M, 1.00B;
--                 whole below 1,000; the typographic minus for a negative count; '—' for NULL.
--   fmt_rank(r)   '#' and thousands separators: #314,815; '—' for NULL.

CREATE OR REPLACE MACRO fmt_sig3(v) AS
    CASE WHEN v < 9.995 THEN printf('%.2f', v) WHEN v < 99.95 THEN printf('%.1f', v) ELSE printf('%.0f', v) END;

CREATE OR REPLACE MACRO fmt_count(n) AS
    CASE
        WHEN n IS NULL THEN '—'
        ELSE CASE WHEN round(n) < 0 THEN '−' ELSE '' END
             || CASE
                    WHEN abs(n) < 999.5 THEN printf('%d', CAST(abs(round(n)) AS BIGINT))
                    WHEN abs(n) < 999.5e3 THEN fmt_sig3(abs(n) / 1e3) || 'k'
                    WHEN abs(n) < 999.5e6 THEN fmt_sig3(abs(n) / 1e6) || 'M'
                    WHEN abs(n) < 999.5e9 THEN fmt_sig3(abs(n) / 1e9) || 'B'
                    ELSE fmt_sig3(abs(n) / 1e12) || 'T'
                END
    END;

CREATE OR REPLACE MACRO fmt_rank(r) AS
    CASE WHEN r IS NULL THEN '—' ELSE '#' || printf('%,d', CAST(r AS BIGINT)) END;

-- ---- sql/views/ai_platform_trend.sql ----
-- ai_platform_trend: per domain, AI platform and month, the platform's share of the domain's
-- AI-referred visits (0-100 as returned) and an estimate of the visits it sent. Rows come from
-- ai_platform_history, plus each snapshot's current platform share (ai_platforms) for the
-- snapshot's reporting period when the history does not list that month. When several
-- snapshots list the same month, the newest snapshot wins.
CREATE OR REPLACE VIEW ai_platform_trend AS
WITH snap AS (
    SELECT snapshot_month, domain, ai_total_visits,
           CAST(strptime(coalesce(traffic_period, snapshot_month), '%Y-%m') AS DATE) AS period_month
    FROM sites
),
hist AS (
    SELECT snapshot_month, domain, platform, month, share_pct, 'history' AS source
    FROM ai_platform_history
),
cur AS (
    SELECT p.snapshot_month, p.domain, p.platform, s.period_month AS month, p.share_pct, 'current' AS source
    FROM ai_platforms p
    JOIN snap s ON s.snapshot_month = p.snapshot_month AND s.domain = p.domain
    WHERE NOT EXISTS (
        SELECT 1 FROM ai_platform_history h
        WHERE h.snapshot_month = p.snapshot_month AND h.domain = p.domain
          AND h.platform = p.platform AND h.month = s.period_month)
),
best AS (
    SELECT * FROM (SELECT * FROM hist UNION ALL SELECT * FROM cur)
    QUALIFY row_number() OVER (
        PARTITION BY domain, platform, month
        ORDER BY snapshot_month DESC, source = 'history' DESC) = 1
)
SELECT
    b.domain,
    b.platform,
    b.month,
    b.share_pct,
    s.ai_total_visits AS snapshot_ai_total_visits,
    b.share_pct / 100 * s.ai_total_visits AS estimated_visits,
    b.snapshot_month AS source_snapshot,
    b.source
FROM best b
LEFT JOIN snap s ON s.snapshot_month = b.snapshot_month AND s.domain = b.domain;

COMMENT ON VIEW ai_platform_trend IS 'AI assistant referrals per domain, platform and month across snapshots (newest snapshot wins), with an estimate of visits per platform.';
COMMENT ON COLUMN ai_platform_trend.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN ai_platform_trend.platform IS 'AI platform host name, e.g. chatgpt.com.';
COMMENT ON COLUMN ai_platform_trend.month IS 'Month (DATE, first day of the month).';
COMMENT ON COLUMN ai_platform_trend.share_pct IS 'Percent 0-100 as returned: the platform''s share of the domain''s AI-referred visits in the month.';
COMMENT ON COLUMN ai_platform_trend.snapshot_ai_total_visits IS 'sites.ai_total_visits of source_snapshot: all AI-referred visits in that snapshot''s period (count, estimate).';
COMMENT ON COLUMN ai_platform_trend.estimated_visits IS 'ESTIMATE, derived here: share_pct / 100 * snapshot_ai_total_visits (visits, fractional). For history months it applies the month''s share to the snapshot''s total.';
COMMENT ON COLUMN ai_platform_trend.source_snapshot IS 'Snapshot (YYYY-MM) the row was taken from.';
COMMENT ON COLUMN ai_platform_trend.source IS 'history = ai_platform_history; current = ai_platforms share for the snapshot''s reporting period (traffic_period).';

-- ---- sql/views/changes.sql ----
-- What changed between complete months: complete_months first (the other views compare each
-- complete month with the complete month before it), then one view per question analysts ask
-- every month. They live in one file because views are created in file-name order and every
-- changes_* view reads complete_months.
--
-- A month is complete when its latest finished run (status other than 'running', and other
-- than 'month_mismatch': `run --snapshot M` against an API serving another month stores nothing) loaded or
-- recorded as rejected every watchlist domain: status 'complete' or 'up_to_date', or the run's
-- own counts say so (domains_loaded + domains_rejected >= domains_total > 0; a run that loaded
-- everything but failed afterwards, e.g. on the Parquet export, still left complete data).
-- Comparisons are between complete months only, so a month stopped for credits halfway never
-- makes half the watchlist look as if it vanished. The previous complete month need not be the
-- previous calendar month.

CREATE OR REPLACE VIEW complete_months AS
WITH latest AS (
    SELECT *
    FROM runs
    WHERE status NOT IN ('running', 'month_mismatch') -- a mismatch stored nothing under its month
    QUALIFY row_number() OVER (PARTITION BY snapshot_month ORDER BY started_at DESC, run_id DESC) = 1
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
    (SELECT count(*) FROM sites s WHERE s.snapshot_month = l.snapshot_month) AS domains_in_warehouse
FROM latest l
WHERE l.status IN ('complete', 'up_to_date')
   OR (l.domains_total > 0 AND coalesce(l.domains_loaded, 0) + coalesce(l.domains_rejected, 0) >= l.domains_total);

COMMENT ON VIEW complete_months IS 'Snapshots whose latest finished run left every watchlist domain loaded or rejected by the API (status complete or up_to_date, or loaded + rejected = total), each with the complete month before it. The changes_* views compare each month here with its previous_month.';
COMMENT ON COLUMN complete_months.snapshot_month IS 'Complete snapshot (YYYY-MM).';
COMMENT ON COLUMN complete_months.previous_month IS 'The complete snapshot before it (YYYY-MM), not necessarily the previous calendar month; NULL for the first complete month.';
COMMENT ON COLUMN complete_months.run_id IS 'The latest finished run of the snapshot (runs.run_id), the one that decides completeness.';
COMMENT ON COLUMN complete_months.status IS 'That run''s status (complete, up_to_date, or another status when its counts show every domain loaded or rejected).';
COMMENT ON COLUMN complete_months.finished_at IS 'When that run finished (TIMESTAMP, UTC).';
COMMENT ON COLUMN complete_months.domains_total IS 'Watchlist domains in that run''s plan (count).';
COMMENT ON COLUMN complete_months.domains_loaded IS 'Domains of the snapshot loaded when that run ended (count).';
COMMENT ON COLUMN complete_months.domains_rejected IS 'Domains the API rejected with 400 in the snapshot (count).';
COMMENT ON COLUMN complete_months.domains_in_warehouse IS 'Rows of sites for the snapshot (count): every domain ever loaded for it, also ones since dropped from the watchlist.';

-- change_pairs(against): the months each changes_* macro compares: every complete month with
-- the complete month before it (against NULL: what the changes_* views show), or every complete
-- month with the month against (`sitewatch changes --against MONTH`).
CREATE OR REPLACE MACRO change_pairs(against) AS TABLE
SELECT snapshot_month, CASE WHEN against IS NULL THEN previous_month ELSE CAST(against AS VARCHAR) END AS previous_month
FROM complete_months
WHERE CASE WHEN against IS NULL THEN previous_month IS NOT NULL ELSE snapshot_month <> CAST(against AS VARCHAR) END;

-- change_domains(against, for_month): the domains each list of changes compares, per pair of
-- change_pairs: those loaded in both months. for_month keeps that month's pair only (NULL: every
-- pair), so `sitewatch changes` reads two months' rows whatever the warehouse holds.
CREATE OR REPLACE MACRO change_domains(against, for_month) AS TABLE
SELECT p.snapshot_month, p.previous_month, s.domain
FROM change_pairs(against) p
JOIN sites s ON s.snapshot_month = p.snapshot_month
JOIN sites o ON o.snapshot_month = p.previous_month AND o.domain = s.domain
WHERE for_month IS NULL OR p.snapshot_month = CAST(for_month AS VARCHAR);

-- change_sides(against, for_month): which side of which pair each month's rows are: a lists
-- macro joins its rows with this once instead of once per side (one scan of the table).
CREATE OR REPLACE MACRO change_sides(against, for_month) AS TABLE
SELECT snapshot_month, previous_month, snapshot_month AS read_month, true AS is_current
FROM change_pairs(against) WHERE for_month IS NULL OR snapshot_month = CAST(for_month AS VARCHAR)
UNION ALL
SELECT snapshot_month, previous_month, previous_month, false
FROM change_pairs(against) WHERE for_month IS NULL OR snapshot_month = CAST(for_month AS VARCHAR);

-- change_months(against, for_month): the months those pairs read (compared and compared with).
CREATE OR REPLACE MACRO change_months(against, for_month) AS TABLE
SELECT snapshot_month FROM change_pairs(against) WHERE for_month IS NULL OR snapshot_month = CAST(for_month AS VARCHAR)
UNION
SELECT previous_month FROM change_pairs(against) WHERE for_month IS NULL OR snapshot_month = CAST(for_month AS VARCHAR);

-- changes_movers: per pair of consecutive complete months, each domain's change in visits,
-- global rank, AI-referred visits and share, and every channel share, with a mover rank per
-- metric. Domains must have the metric in both months.
--
-- changes_movers_scored(against, for_month) is every move with its importance but no rank:
-- `sitewatch changes` takes the few largest moves of one month from it (for_month prunes the
-- months before any join; NULL: every month). The sites columns are compared on one join of
-- the two months' sites rows and the channel shares on one join of the two months' shares, not
-- as one long list of (domain, metric, value) rows self-joined on four keys: at 100,000 domains
-- that join and the rank's sort over every month took minutes.
CREATE OR REPLACE MACRO changes_movers_scored(against := NULL, for_month := NULL) AS TABLE
WITH pairs AS (
    SELECT snapshot_month, previous_month FROM change_pairs(against)
    WHERE for_month IS NULL OR snapshot_month = CAST(for_month AS VARCHAR)
),
site_pairs AS (
    SELECT p.snapshot_month, p.previous_month, c.domain,
           c.total_visits AS cur_visits, o.total_visits AS prev_visits,
           CAST(c.global_rank AS DOUBLE) AS cur_rank, CAST(o.global_rank AS DOUBLE) AS prev_rank,
           CAST(c.ai_total_visits AS DOUBLE) AS cur_ai, CAST(o.ai_total_visits AS DOUBLE) AS prev_ai,
           c.ai_global_traffic_share AS cur_ai_share, o.ai_global_traffic_share AS prev_ai_share
    FROM pairs p
    JOIN sites c ON c.snapshot_month = p.snapshot_month
    JOIN sites o ON o.snapshot_month = p.previous_month AND o.domain = c.domain
),
joined AS (
    SELECT snapshot_month, previous_month, domain, 'visits' AS metric, CAST(NULL AS VARCHAR) AS channel,
           prev_visits AS previous_value, cur_visits AS current_value
    FROM site_pairs WHERE cur_visits IS NOT NULL AND prev_visits IS NOT NULL
    UNION ALL
    SELECT snapshot_month, previous_month, domain, 'global_rank', NULL, prev_rank, cur_rank
    FROM site_pairs WHERE cur_rank IS NOT NULL AND prev_rank IS NOT NULL
    UNION ALL
    SELECT snapshot_month, previous_month, domain, 'ai_visits', NULL, prev_ai, cur_ai
    FROM site_pairs WHERE cur_ai IS NOT NULL AND prev_ai IS NOT NULL
    UNION ALL
    SELECT snapshot_month, previous_month, domain, 'ai_traffic_share', NULL, prev_ai_share, cur_ai_share
    FROM site_pairs WHERE cur_ai_share IS NOT NULL AND prev_ai_share IS NOT NULL
    UNION ALL
    SELECT p.snapshot_month, p.previous_month, c.domain, 'channel_share', c.channel, o.share, c.share
    FROM pairs p
    JOIN sources_share c ON c.snapshot_month = p.snapshot_month
    JOIN sources_share o ON o.snapshot_month = p.previous_month AND o.domain = c.domain AND o.channel = c.channel
    WHERE c.share IS NOT NULL AND o.share IS NOT NULL
),
sizes AS (
    SELECT s.snapshot_month, s.domain, s.total_visits AS visits FROM sites s SEMI JOIN pairs p USING (snapshot_month)
),
-- importance is the visits a move stands for, so a 1 -> 2 visit change never leads a list of
-- sites with millions: |change| for visits and AI visits; for a rank, |ln(previous / current)|
-- times the domain's visits (on a Zipf curve that is about the visits gained or lost); for a
-- share, |change in share| times the domain's visits (the visits that moved).
scored AS (
    SELECT j.*,
           j.current_value - j.previous_value AS change,
           CASE WHEN j.previous_value <> 0 THEN j.current_value / j.previous_value - 1 END AS change_ratio,
           CASE
               WHEN j.metric IN ('visits', 'ai_visits') THEN abs(j.current_value - j.previous_value)
               WHEN j.metric = 'global_rank' THEN
                   CASE WHEN j.previous_value > 0 AND j.current_value > 0 THEN abs(ln(j.previous_value / j.current_value)) * z.visits END
               ELSE abs(j.current_value - j.previous_value) * z.visits
           END AS importance
    FROM joined j
    LEFT JOIN sizes z ON z.snapshot_month = j.snapshot_month AND z.domain = j.domain
)
SELECT
    snapshot_month,
    previous_month,
    domain,
    metric,
    channel,
    previous_value,
    current_value,
    change,
    change_ratio,
    CASE
        WHEN change = 0 OR metric = 'channel_share' THEN NULL
        WHEN metric = 'global_rank' THEN change < 0
        ELSE change > 0
    END AS improved,
    importance
FROM scored;

CREATE OR REPLACE MACRO changes_movers_in(against := NULL) AS TABLE
SELECT *,
       row_number() OVER (
           PARTITION BY snapshot_month, metric
           ORDER BY importance DESC NULLS LAST, abs(change) DESC, domain, channel) AS mover_rank
FROM changes_movers_scored(against := against);

CREATE OR REPLACE VIEW changes_movers AS SELECT * FROM changes_movers_in();


COMMENT ON VIEW changes_movers IS 'Change of each domain''s visits, global rank, AI-referred visits, AI traffic share and channel shares between a complete month and the complete month before it, ranked per metric (mover_rank 1 = biggest move). Only domains with the metric in both months.';
COMMENT ON COLUMN changes_movers.snapshot_month IS 'Complete snapshot (YYYY-MM) compared.';
COMMENT ON COLUMN changes_movers.previous_month IS 'Complete snapshot (YYYY-MM) it is compared with (complete_months.previous_month).';
COMMENT ON COLUMN changes_movers.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN changes_movers.metric IS 'visits (sites.total_visits, count), global_rank (1 = most visited), ai_visits (sites.ai_total_visits, count), ai_traffic_share (sites.ai_global_traffic_share, decimal 0-1) or channel_share (sources_share.share of channel, decimal 0-1).';
COMMENT ON COLUMN changes_movers.channel IS 'Channel of a channel_share row (direct, organic_search, ...); NULL for the other metrics.';
COMMENT ON COLUMN changes_movers.previous_value IS 'Value in previous_month, in the metric''s unit (estimates).';
COMMENT ON COLUMN changes_movers.current_value IS 'Value in snapshot_month, in the metric''s unit (estimates).';
COMMENT ON COLUMN changes_movers.change IS 'current_value - previous_value in the metric''s unit: visits, rank places (negative = climbed), or decimal share points for shares (0.05 = 5 percentage points).';
COMMENT ON COLUMN changes_movers.change_ratio IS 'current_value / previous_value - 1 as a decimal (0.25 = +25%); NULL when previous_value is 0.';
COMMENT ON COLUMN changes_movers.improved IS 'true when the move is an improvement (more visits, more AI visits or share, a better i.e. lower rank), false when it is a decline; NULL for channel shares (a shift, neither) and for no change.';
COMMENT ON COLUMN changes_movers.importance IS 'Visits the move stands for (count, estimate): |change| for visits and AI visits; |ln(previous / current)| times the domain''s visits in snapshot_month for a global rank; |change in share| times those visits for a share. NULL when the domain''s visits are unknown.';
COMMENT ON COLUMN changes_movers.mover_rank IS 'Rank of the move within snapshot_month and metric, 1 = most important: by importance (the visits the move stands for, largest first), so a small site''s large percentage never outranks a large site''s larger move in visits; ties by |change|, then domain.';

-- changes_competitors: similar sites that appeared in or dropped out of a domain's list
-- between consecutive complete months (domains loaded in both months; competitors compared
-- lower-cased without www., so a repeated or re-cased entry is one competitor).
--
-- changes_competitors_in(against, for_month): every similar-sites row of a domain in both months
-- is taken once per side of its pair (is_current, change_sides), grouped by pair, domain and competitor, and a
-- group with rows of one side only is a change: one hash aggregate instead of an anti-join each
-- way (at 100,000 domains, 7 s CPU to 3.6 s). for_month: only that month's pair.
CREATE OR REPLACE MACRO changes_competitors_in(against := NULL, for_month := NULL) AS TABLE
WITH both_months AS MATERIALIZED (
    SELECT * FROM change_domains(against, for_month)
),
listed AS (
    SELECT snapshot_month, domain, rtrim(lower(similar_domain), '.') AS name, position, global_rank, total_visits
    FROM similar_sites
),
sides AS (
    SELECT b.snapshot_month, b.previous_month, b.domain, m.is_current, l.name, l.position, l.global_rank, l.total_visits
    FROM listed l
    JOIN change_sides(against, for_month) m ON m.read_month = l.snapshot_month
    JOIN both_months b ON b.snapshot_month = m.snapshot_month AND b.domain = l.domain
),
diff AS (
    SELECT snapshot_month, previous_month, domain,
           CASE WHEN bool_and(is_current) THEN 'new' ELSE 'dropped' END AS change,
           CASE WHEN starts_with(name, 'www.') THEN name[5:] ELSE name END AS competitor,
           min(position) AS position,
           arg_min(global_rank, position) AS global_rank,
           arg_min(total_visits, position) AS total_visits
    FROM sides
    GROUP BY snapshot_month, previous_month, domain, competitor
    HAVING bool_and(is_current) OR NOT bool_or(is_current)
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

CREATE OR REPLACE VIEW changes_competitors AS SELECT * FROM changes_competitors_in();


COMMENT ON VIEW changes_competitors IS 'Competitors (similar sites) that appeared in (new) or dropped out of (dropped) a domain''s list between a complete month and the complete month before it; domains loaded in both months only.';
COMMENT ON COLUMN changes_competitors.snapshot_month IS 'Complete snapshot (YYYY-MM) compared.';
COMMENT ON COLUMN changes_competitors.previous_month IS 'Complete snapshot (YYYY-MM) it is compared with.';
COMMENT ON COLUMN changes_competitors.domain IS 'Normalized watchlist domain whose list changed.';
COMMENT ON COLUMN changes_competitors.change IS 'new = listed in snapshot_month but not in previous_month; dropped = the other way round.';
COMMENT ON COLUMN changes_competitors.competitor IS 'Similar domain, lower case, www. and a trailing dot removed.';
COMMENT ON COLUMN changes_competitors.competitor_position IS 'Position in the list it is in (snapshot_month for new, previous_month for dropped), 1-based.';
COMMENT ON COLUMN changes_competitors.competitor_global_rank IS 'The competitor''s worldwide rank in that list, 1 = most visited; NULL when not ranked.';
COMMENT ON COLUMN changes_competitors.competitor_total_visits IS 'The competitor''s visits as given in that list (count, estimate).';
COMMENT ON COLUMN changes_competitors.competitor_on_watchlist IS 'true when the competitor is a watchlist domain loaded in snapshot_month.';

-- changes_ai_platforms: AI platforms that started (new) or stopped (dropped) referring visits
-- to a domain between consecutive complete months (platforms compared lower-cased).
--
-- changes_ai_platforms_in(against, for_month): grouped as changes_competitors_in.
CREATE OR REPLACE MACRO changes_ai_platforms_in(against := NULL, for_month := NULL) AS TABLE
WITH both_months AS MATERIALIZED (
    SELECT * FROM change_domains(against, for_month)
),
listed AS (
    SELECT snapshot_month, domain, lower(trim(platform)) AS platform, rank, share_pct
    FROM ai_platforms
),
sides AS (
    SELECT b.snapshot_month, b.previous_month, b.domain, m.is_current, l.platform, l.rank, l.share_pct
    FROM listed l
    JOIN change_sides(against, for_month) m ON m.read_month = l.snapshot_month
    JOIN both_months b ON b.snapshot_month = m.snapshot_month AND b.domain = l.domain
)
SELECT snapshot_month, previous_month, domain,
       CASE WHEN bool_and(is_current) THEN 'new' ELSE 'dropped' END AS change,
       platform, min(rank) AS rank, arg_min(share_pct, rank) AS share_pct
FROM sides
GROUP BY snapshot_month, previous_month, domain, platform
HAVING bool_and(is_current) OR NOT bool_or(is_current);

CREATE OR REPLACE VIEW changes_ai_platforms AS SELECT * FROM changes_ai_platforms_in();


COMMENT ON VIEW changes_ai_platforms IS 'AI platforms that began (new) or stopped (dropped) referring visits to a domain between a complete month and the complete month before it; domains loaded in both months only.';
COMMENT ON COLUMN changes_ai_platforms.snapshot_month IS 'Complete snapshot (YYYY-MM) compared.';
COMMENT ON COLUMN changes_ai_platforms.previous_month IS 'Complete snapshot (YYYY-MM) it is compared with.';
COMMENT ON COLUMN changes_ai_platforms.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN changes_ai_platforms.change IS 'new = listed in snapshot_month but not in previous_month; dropped = the other way round.';
COMMENT ON COLUMN changes_ai_platforms.platform IS 'AI platform host name, lower case, e.g. chatgpt.com.';
COMMENT ON COLUMN changes_ai_platforms.rank IS 'The platform''s rank for the domain in the month it is listed in, 1 = largest share.';
COMMENT ON COLUMN changes_ai_platforms.share_pct IS 'Percent 0-100 as returned: the platform''s share of the domain''s AI-referred visits in the month it is listed in.';

-- changes_keywords: top keywords new to or gone from a domain's list between consecutive
-- complete months (compared case-insensitively, trimmed).
--
-- changes_keywords_in(against, for_month): grouped as changes_competitors_in, by the keyword
-- lower-cased and trimmed; the spelling shown is the one at the best position.
CREATE OR REPLACE MACRO changes_keywords_in(against := NULL, for_month := NULL) AS TABLE
WITH both_months AS MATERIALIZED (
    SELECT * FROM change_domains(against, for_month)
),
listed AS (
    SELECT snapshot_month, domain, lower(trim(keyword)) AS key, keyword, position, search_volume, estimated_value_usd
    FROM keywords
),
sides AS (
    SELECT b.snapshot_month, b.previous_month, b.domain, m.is_current, l.key, l.keyword, l.position, l.search_volume, l.estimated_value_usd
    FROM listed l
    JOIN change_sides(against, for_month) m ON m.read_month = l.snapshot_month
    JOIN both_months b ON b.snapshot_month = m.snapshot_month AND b.domain = l.domain
)
SELECT snapshot_month, previous_month, domain,
       CASE WHEN bool_and(is_current) THEN 'new' ELSE 'dropped' END AS change,
       arg_min(keyword, position) AS keyword, min(position) AS position,
       arg_min(search_volume, position) AS search_volume,
       arg_min(estimated_value_usd, position) AS estimated_value_usd
FROM sides
GROUP BY snapshot_month, previous_month, domain, key
HAVING bool_and(is_current) OR NOT bool_or(is_current);

CREATE OR REPLACE VIEW changes_keywords AS SELECT * FROM changes_keywords_in();


COMMENT ON VIEW changes_keywords IS 'Top SEO keywords new to (new) or gone from (dropped) a domain''s list between a complete month and the complete month before it; domains loaded in both months only.';
COMMENT ON COLUMN changes_keywords.snapshot_month IS 'Complete snapshot (YYYY-MM) compared.';
COMMENT ON COLUMN changes_keywords.previous_month IS 'Complete snapshot (YYYY-MM) it is compared with.';
COMMENT ON COLUMN changes_keywords.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN changes_keywords.change IS 'new = in snapshot_month''s list but not previous_month''s; dropped = the other way round (keywords matched case-insensitively, trimmed).';
COMMENT ON COLUMN changes_keywords.keyword IS 'Keyword as spelled in the list it is in.';
COMMENT ON COLUMN changes_keywords.position IS 'Position in that list, 1-based.';
COMMENT ON COLUMN changes_keywords.search_volume IS 'Monthly search volume in that list (searches per month, estimate).';
COMMENT ON COLUMN changes_keywords.estimated_value_usd IS 'Estimated value of the keyword''s traffic to the domain in that list (US dollars, estimate).';

-- changes_top_countries: visitor countries entering or leaving a domain's top 5 by share
-- between consecutive complete months (ranking as in top_countries: share, then code);
-- for_month: only that month's pair, and only the months it compares are ranked.
CREATE OR REPLACE MACRO changes_top_countries_in(against := NULL, for_month := NULL) AS TABLE
WITH both_months AS MATERIALIZED (
    SELECT * FROM change_domains(against, for_month)
),
ranked AS MATERIALIZED (
    SELECT snapshot_month, domain, upper(country_code) AS country_code, share,
           row_number() OVER (PARTITION BY snapshot_month, domain
                              ORDER BY share DESC NULLS LAST, upper(country_code)) AS position
    FROM geography_share
    WHERE snapshot_month IN (SELECT snapshot_month FROM change_months(against, for_month))
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

CREATE OR REPLACE VIEW changes_top_countries AS SELECT * FROM changes_top_countries_in();


COMMENT ON VIEW changes_top_countries IS 'Visitor countries that entered (entered) or left (left) a domain''s top 5 by share between a complete month and the complete month before it; domains loaded in both months only.';
COMMENT ON COLUMN changes_top_countries.snapshot_month IS 'Complete snapshot (YYYY-MM) compared.';
COMMENT ON COLUMN changes_top_countries.previous_month IS 'Complete snapshot (YYYY-MM) it is compared with.';
COMMENT ON COLUMN changes_top_countries.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN changes_top_countries.change IS 'entered = in the top 5 of snapshot_month but not of previous_month; left = the other way round.';
COMMENT ON COLUMN changes_top_countries.country_code IS 'ISO 3166-1 alpha-2 code (upper case).';
COMMENT ON COLUMN changes_top_countries.country_name IS 'Country name from countries; NULL when countries has no row for the code.';
COMMENT ON COLUMN changes_top_countries.position IS 'Position by share in snapshot_month (1 = largest share); NULL when the country is not listed then.';
COMMENT ON COLUMN changes_top_countries.previous_position IS 'Position by share in previous_month; NULL when the country was not listed then.';
COMMENT ON COLUMN changes_top_countries.share IS 'Decimal share 0-1 of the domain''s visits from the country in snapshot_month; NULL when not listed.';
COMMENT ON COLUMN changes_top_countries.previous_share IS 'Decimal share 0-1 in previous_month; NULL when not listed.';

-- changes_movers_top(against, for_month, per_metric): the per_metric largest moves of each
-- month (for_month: that month only) and metric among the moves that changed at all, ranked as
-- changes_movers.mover_rank ranks them (unchanged rows keep their place there but are no news):
-- what `sitewatch changes` and the report show. Only the moves at or above each metric's
-- per_metric-th largest importance are sorted, not the month's million (at 100,000 domains the
-- sort of every move took 40 % of the read and 830 MB; then 360 MB).
CREATE OR REPLACE MACRO changes_movers_top(against := NULL, for_month := NULL, per_metric := 5) AS TABLE
WITH moves AS MATERIALIZED (
    SELECT snapshot_month, previous_month, domain, metric, channel, previous_value, current_value, change, change_ratio,
           improved, importance
    FROM changes_movers_scored(against := against, for_month := for_month)
    WHERE change <> 0
),
floors AS (
    SELECT snapshot_month, metric,
           CASE WHEN count(importance) >= per_metric THEN list_min(max(importance, per_metric)) END AS floor
    FROM moves GROUP BY snapshot_month, metric
)
SELECT m.snapshot_month, m.previous_month, m.domain, m.metric, m.channel, m.previous_value, m.current_value, m.change,
       m.change_ratio, m.improved,
       CAST(row_number() OVER (PARTITION BY m.snapshot_month, m.metric
           ORDER BY m.importance DESC NULLS LAST, abs(m.change) DESC, m.domain, m.channel) AS BIGINT) AS mover_rank
FROM moves m JOIN floors f ON f.snapshot_month = m.snapshot_month AND f.metric = m.metric
WHERE f.floor IS NULL OR m.importance >= f.floor
QUALIFY mover_rank <= per_metric;

-- changes_cache_sources(for_month, against_month): per table the lists of changes read (movers,
-- competitors, AI platforms, keywords, countries) and each of the two months compared, its row
-- count and an order-free checksum (rows_checksum of hash() of the columns read). The cache of the
-- latest month's lists (changes_cached_*, migration 0013) records these when it is computed and
-- is read only while they are the same now: any insert, delete or update of a row it read makes
-- the read compute the lists from the views. Months as constants: only their row groups are read.
CREATE OR REPLACE MACRO changes_cache_sources(for_month, against_month) AS TABLE
SELECT 'sites' AS source_table, snapshot_month AS source_month, count(*) AS row_count,
       rows_checksum(hash(domain, total_visits, global_rank, ai_total_visits, ai_global_traffic_share)) AS checksum
FROM sites WHERE snapshot_month IN (for_month, against_month) GROUP BY snapshot_month
UNION ALL
SELECT 'sources_share', snapshot_month, count(*), rows_checksum(hash(domain, channel, share))
FROM sources_share WHERE snapshot_month IN (for_month, against_month) GROUP BY snapshot_month
UNION ALL
SELECT 'similar_sites', snapshot_month, count(*), rows_checksum(hash(domain, similar_domain, position, global_rank, total_visits))
FROM similar_sites WHERE snapshot_month IN (for_month, against_month) GROUP BY snapshot_month
UNION ALL
SELECT 'ai_platforms', snapshot_month, count(*), rows_checksum(hash(domain, platform, rank, share_pct))
FROM ai_platforms WHERE snapshot_month IN (for_month, against_month) GROUP BY snapshot_month
UNION ALL
SELECT 'keywords', snapshot_month, count(*), rows_checksum(hash(domain, keyword, position, search_volume, estimated_value_usd))
FROM keywords WHERE snapshot_month IN (for_month, against_month) GROUP BY snapshot_month
UNION ALL
SELECT 'geography_share', snapshot_month, count(*), rows_checksum(hash(domain, country_code, share))
FROM geography_share WHERE snapshot_month IN (for_month, against_month) GROUP BY snapshot_month
UNION ALL
SELECT 'countries', '', count(*), coalesce(rows_checksum(hash(alpha2, name)), 0) FROM countries;

-- ---- sql/views/channel_mix.sql ----
-- channel_mix: each domain's traffic share per channel beside the watchlist's average share
-- for that channel in the same snapshot.
CREATE OR REPLACE VIEW channel_mix AS
SELECT
    snapshot_month,
    domain,
    channel,
    share,
    avg(share) OVER w AS watchlist_avg_share,
    share - avg(share) OVER w AS diff_from_avg,
    count(share) OVER w AS watchlist_domains
FROM sources_share
WINDOW w AS (PARTITION BY snapshot_month, channel);

COMMENT ON VIEW channel_mix IS 'Traffic share by channel per domain and snapshot, next to the average over the watchlist domains loaded in that snapshot. All shares are decimals 0-1.';
COMMENT ON COLUMN channel_mix.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN channel_mix.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN channel_mix.channel IS 'Channel: direct, organic_search, paid_search, organic_social, paid_social, email, referrals, generative_ai, affiliate or display_ads.';
COMMENT ON COLUMN channel_mix.share IS 'Decimal share 0-1 of the domain''s visits from the channel (estimate).';
COMMENT ON COLUMN channel_mix.watchlist_avg_share IS 'Unweighted mean of share over the watchlist domains with a value for this channel in this snapshot (decimal 0-1).';
COMMENT ON COLUMN channel_mix.diff_from_avg IS 'share - watchlist_avg_share, in decimal share points (0.05 = 5 percentage points above average).';
COMMENT ON COLUMN channel_mix.watchlist_domains IS 'Number of domains the average is taken over (count).';

-- ---- sql/views/competitors.sql ----
-- competitors: each watchlist domain's similar sites with both sides' rank and traffic, and
-- whether the competitor is itself on the watchlist (loaded in sites for the same snapshot).
CREATE OR REPLACE VIEW competitors AS
SELECT
    ss.snapshot_month,
    ss.domain,
    ss.position AS competitor_position,
    ss.similar_domain AS competitor,
    ss.title AS competitor_title,
    s.global_rank AS domain_global_rank,
    ss.global_rank AS competitor_global_rank,
    s.total_visits AS domain_total_visits,
    ss.total_visits AS competitor_total_visits,
    ss.total_visits / nullif(s.total_visits, 0) AS competitor_visits_ratio,
    ss.category_slug AS competitor_category_slug,
    ss.country_code AS competitor_country_code,
    ss.country_rank AS competitor_country_rank,
    w.domain IS NOT NULL AS competitor_on_watchlist
FROM similar_sites ss
LEFT JOIN sites s
    ON s.snapshot_month = ss.snapshot_month AND s.domain = ss.domain
LEFT JOIN sites w
    ON w.snapshot_month = ss.snapshot_month
   AND w.domain = regexp_replace(rtrim(lower(ss.similar_domain), '.'), '^www\.', '');

COMMENT ON VIEW competitors IS 'Watchlist domain -> similar (competing) domain per snapshot, with both sides'' global rank and visits (estimates) and a watchlist flag.';
COMMENT ON COLUMN competitors.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN competitors.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN competitors.competitor_position IS 'Position in the domain''s similar-sites list, 1-based.';
COMMENT ON COLUMN competitors.competitor IS 'Similar domain as returned by the API.';
COMMENT ON COLUMN competitors.competitor_title IS 'Similar site''s title.';
COMMENT ON COLUMN competitors.domain_global_rank IS 'The watchlist domain''s worldwide rank in the snapshot, 1 = most visited.';
COMMENT ON COLUMN competitors.competitor_global_rank IS 'The competitor''s worldwide rank, 1 = most visited; NULL when not ranked.';
COMMENT ON COLUMN competitors.domain_total_visits IS 'The watchlist domain''s visits in the period (count, estimate).';
COMMENT ON COLUMN competitors.competitor_total_visits IS 'The competitor''s visits in the period (count, estimate).';
COMMENT ON COLUMN competitors.competitor_visits_ratio IS 'competitor_total_visits / domain_total_visits (ratio; 2.0 = twice the domain''s visits); NULL when either is missing or 0.';
COMMENT ON COLUMN competitors.competitor_category_slug IS 'The competitor''s category path as returned (may be mixed case or NULL).';
COMMENT ON COLUMN competitors.competitor_country_code IS 'ISO alpha-2 country of competitor_country_rank.';
COMMENT ON COLUMN competitors.competitor_country_rank IS 'The competitor''s rank within its country.';
COMMENT ON COLUMN competitors.competitor_on_watchlist IS 'true when the competitor (lower-cased, www. removed) is itself a watchlist domain loaded in the same snapshot.';

-- ---- sql/views/discover_candidates.sql ----
-- discover_candidates: the domains the watchlist's similar sites point at that are not on the
-- watchlist, one row per snapshot and candidate, ranked by how strongly the watchlist points at
-- them (what `sitewatch discover` lists; docs/discover.md).
--
-- reach: each watched domain that lists the candidate adds a weight between 0.25 and 1:
--   (0.5 + 0.5 * size) * (0.5 + 0.5 / sqrt(position)), size = ln(1 + its visits) / ln(1 + the
--   month's largest watched visits). The weights are damped on purpose: one giant listing a
--   domain (at most 1) never outweighs four or more watched domains listing another (at least 1).
-- trend: +0.2 when the candidate is new (listed this month, in no earlier month held), +0.2
--   when more watched domains list it than in the previous month held, +0.1 when its global
--   rank improved since then. score = reach * (1 + trend): a new or rising candidate goes
--   ahead of a static one of the same reach.
-- Left out: candidates loaded as watchlist domains in the month, names that are not host
-- names (a conservative pattern; `discover` applies the watchlist normalizer on top), domains
-- the API rejected with 400 in any run (fetch_errors), and candidates below the size floor:
-- fewer than min_visits visits a month (default 5,000; config discover.min_visits, `discover
-- --min-visits`). A watched domain costs 2 credits a month, 24 a year; below a few thousand
-- visits a month the estimate of a site is coarse and its moves stay under the
-- 10,000-visit floor of needs_attention, so those credits would buy numbers nobody acts on. A candidate without
-- a visits figure passes only a floor of 0.
--
-- One list behind `sitewatch discover`, `discover --add`, the discover: block of `schedule`, the
-- "worth tracking" list of `changes` and "Worth tracking next" in the report: the table macro
-- discover_candidates_in(min_visits) with the floor of the config; the view discover_candidates is
-- the macro with the default floor.
--
-- requires: _format.sql
CREATE OR REPLACE MACRO discover_candidates_in(min_visits := NULL) AS TABLE
WITH months AS (
    SELECT snapshot_month, lag(snapshot_month) OVER (ORDER BY snapshot_month) AS previous_month
    FROM (SELECT DISTINCT snapshot_month FROM similar_sites)
),
watched AS (
    SELECT snapshot_month, domain, total_visits,
           count(*) OVER (PARTITION BY snapshot_month) AS watched_total,
           max(total_visits) OVER (PARTITION BY snapshot_month) AS largest_visits
    FROM sites
),
-- The name is cleaned once per distinct similar_domain (names: 645 a month at 100,000
-- domains, against 624,000 rows; cleaning every row took 0.7 s of the macro's 4.2 s CPU), a
-- leading www. cut with starts_with, not a regular expression. listed and per_month are
-- materialized: per_month is read three times (this month, the month before, first_seen), and
-- inlined it cleaned and grouped every row of similar_sites three times (at 100,000 domains 8 s
-- CPU of `changes`). similar_domain is NOT NULL, so the join with names keeps every row.
names AS MATERIALIZED (
    SELECT similar_domain, rtrim(lower(trim(similar_domain)), '.') AS name
    FROM (SELECT DISTINCT similar_domain FROM similar_sites)
),
listed AS MATERIALIZED (
    SELECT ss.snapshot_month, ss.domain AS listed_by, ss.position,
           CASE WHEN starts_with(ss.name, 'www.') THEN ss.name[5:] ELSE ss.name END AS candidate,
           ss.title, ss.category_slug, ss.global_rank, ss.total_visits, ss.country_code,
           (0.5 + 0.5 * coalesce(ln(1 + w.total_visits) / nullif(ln(1 + w.largest_visits), 0), 0))
             * (0.5 + 0.5 / sqrt(greatest(ss.position, 1))) AS weight
    FROM (SELECT s.*, n.name FROM similar_sites s JOIN names n ON n.similar_domain = s.similar_domain) ss
    LEFT JOIN watched w ON w.snapshot_month = ss.snapshot_month AND w.domain = ss.domain
),
-- watched_by and listed_by come from the distinct (candidate, watched domain) pairs, grouped
-- apart: DuckDB 1.1's DISTINCT aggregates over 1.25 M rows took a fifth of the macro's time.
per_month AS MATERIALIZED (
    SELECT a.*, w.watched_by, w.listed_by
    FROM (
        SELECT snapshot_month, candidate,
               sum(weight) AS reach,
               min(position) AS best_position,
               arg_min(title, position) AS title,
               arg_min(category_slug, position) AS category_slug,
               min(global_rank) AS global_rank,
               max(total_visits) AS total_visits,
               arg_min(country_code, position) AS country_code
        FROM listed
        GROUP BY snapshot_month, candidate
    ) a
    JOIN (
        SELECT snapshot_month, candidate, count(*) AS watched_by, string_agg(listed_by, ', ' ORDER BY listed_by) AS listed_by
        FROM (SELECT DISTINCT snapshot_month, candidate, listed_by FROM listed)
        GROUP BY snapshot_month, candidate
    ) w USING (snapshot_month, candidate)
),
first_seen AS (
    SELECT candidate, min(snapshot_month) AS first_month FROM per_month GROUP BY candidate
),
rejected AS (
    SELECT DISTINCT domain FROM fetch_errors WHERE http_status = 400
),
trended AS (
    SELECT c.*,
           (SELECT any_value(watched_total) FROM watched w WHERE w.snapshot_month = c.snapshot_month) AS watched_total,
           m.previous_month,
           coalesce(p.watched_by, 0) AS previous_watched_by,
           p.global_rank AS previous_global_rank,
           f.first_month,
           m.previous_month IS NOT NULL AND f.first_month = c.snapshot_month AS is_new,
           m.previous_month IS NOT NULL AND c.watched_by > coalesce(p.watched_by, 0) AS more_watchers,
           c.global_rank < p.global_rank AS rank_improved
    FROM per_month c
    JOIN months m ON m.snapshot_month = c.snapshot_month
    LEFT JOIN per_month p ON p.snapshot_month = m.previous_month AND p.candidate = c.candidate
    JOIN first_seen f ON f.candidate = c.candidate
    WHERE NOT EXISTS (SELECT 1 FROM sites s WHERE s.snapshot_month = c.snapshot_month AND s.domain = c.candidate)
      AND coalesce(c.total_visits, 0) >= coalesce(min_visits, 5000)
      AND c.candidate NOT IN (SELECT domain FROM rejected)
      AND regexp_full_match(c.candidate, '([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?')
      AND regexp_matches(c.candidate, '[a-z]')
),
scored AS (
    SELECT *,
           reach * (1 + 0.2 * CAST(is_new AS INTEGER) + 0.2 * CAST(more_watchers AS INTEGER)
                      + 0.1 * CAST(coalesce(rank_improved, false) AS INTEGER)) AS score
    FROM trended
)
SELECT
    snapshot_month,
    row_number() OVER (PARTITION BY snapshot_month
                       ORDER BY score DESC, watched_by DESC, total_visits DESC NULLS LAST, global_rank ASC NULLS LAST, candidate) AS discover_rank,
    candidate,
    title,
    category_slug,
    global_rank,
    total_visits,
    country_code,
    watched_by,
    watched_total,
    listed_by,
    best_position,
    round(reach, 4) AS reach,
    round(score, 4) AS score,
    is_new,
    more_watchers OR coalesce(rank_improved, false) AS is_rising,
    previous_month,
    previous_watched_by,
    previous_global_rank,
    first_month,
    'similar to ' || watched_by || ' of your ' || coalesce(watched_total, 0)
      || CASE
             WHEN is_new THEN ', new this month'
             WHEN previous_month IS NULL THEN ''
             WHEN watched_by > previous_watched_by THEN ', ' || (watched_by - previous_watched_by) || ' more than last month'
             WHEN watched_by < previous_watched_by THEN ', ' || (previous_watched_by - watched_by) || ' fewer than last month'
             ELSE ', as many as last month'
         END
      || CASE
             WHEN total_visits IS NULL THEN ''
             ELSE '; ' || fmt_count(total_visits) || ' visits'
         END
      || CASE
             WHEN global_rank IS NULL THEN ''
             ELSE CASE WHEN total_visits IS NULL THEN '; ' ELSE ', ' END || 'rank ' || fmt_rank(global_rank)
                  || CASE WHEN global_rank < previous_global_rank THEN ' ↑'
                          WHEN global_rank > previous_global_rank THEN ' ↓'
                          ELSE '' END
         END AS reason
FROM scored;

CREATE OR REPLACE VIEW discover_candidates AS SELECT * FROM discover_candidates_in();

COMMENT ON VIEW discover_candidates IS 'Domains the watchlist''s similar sites point at that are not on the watchlist, with at least 5,000 visits a month (the default size floor; the macro discover_candidates_in(min_visits) takes the config''s discover.min_visits), per snapshot, ranked by reach (watched domains listing them, weighted by their size and the position) times a bonus for new or rising ones, with the reason in words. Host names only; domains the API rejected (400) left out. What `sitewatch discover` lists (docs/discover.md).';
COMMENT ON COLUMN discover_candidates.snapshot_month IS 'Snapshot (YYYY-MM) whose similar sites are counted.';
COMMENT ON COLUMN discover_candidates.discover_rank IS 'Rank of the candidate in the snapshot, 1 = the one the watchlist points at most (score, then watched_by, visits, global rank, name).';
COMMENT ON COLUMN discover_candidates.candidate IS 'Candidate domain: the similar domain lower-cased, trailing dot and a leading www. removed.';
COMMENT ON COLUMN discover_candidates.title IS 'Candidate''s site title (from the list that ranks it highest).';
COMMENT ON COLUMN discover_candidates.category_slug IS 'Candidate''s category path as returned (may be mixed case or NULL).';
COMMENT ON COLUMN discover_candidates.global_rank IS 'Candidate''s worldwide rank in the snapshot, 1 = most visited; NULL when not ranked.';
COMMENT ON COLUMN discover_candidates.total_visits IS 'Candidate''s visits in the period (count, estimate); at least the size floor.';
COMMENT ON COLUMN discover_candidates.country_code IS 'ISO alpha-2 country of the candidate''s country rank.';
COMMENT ON COLUMN discover_candidates.watched_by IS 'Watchlist domains that list the candidate as similar in the snapshot (count).';
COMMENT ON COLUMN discover_candidates.watched_total IS 'Watchlist domains loaded in the snapshot (count): the "of your N" of the reason.';
COMMENT ON COLUMN discover_candidates.listed_by IS 'The watchlist domains that list it, comma-separated, sorted.';
COMMENT ON COLUMN discover_candidates.best_position IS 'Best (lowest) position of the candidate in those lists, 1-based.';
COMMENT ON COLUMN discover_candidates.reach IS 'Sum over the listing watched domains of (0.5 + 0.5 * size) * (0.5 + 0.5 / sqrt(position)), size = ln(1 + visits) / ln(1 + the month''s largest watched visits); each listing adds 0.25 to 1.';
COMMENT ON COLUMN discover_candidates.score IS 'reach * (1 + 0.2 if is_new + 0.2 if more watched domains list it than last month + 0.1 if its rank improved); the ranking key.';
COMMENT ON COLUMN discover_candidates.is_new IS 'true when the candidate is listed in this snapshot and in no earlier snapshot held (false in the first snapshot held).';
COMMENT ON COLUMN discover_candidates.is_rising IS 'true when more watched domains list it than in previous_month, or its global rank improved since.';
COMMENT ON COLUMN discover_candidates.previous_month IS 'The snapshot held before it with similar sites (YYYY-MM); NULL for the first.';
COMMENT ON COLUMN discover_candidates.previous_watched_by IS 'Watchlist domains that listed it in previous_month (count; 0 when none or no previous month).';
COMMENT ON COLUMN discover_candidates.previous_global_rank IS 'Its worldwide rank in previous_month; NULL when not listed then.';
COMMENT ON COLUMN discover_candidates.first_month IS 'First snapshot held (YYYY-MM) in which a watchlist domain listed it.';
COMMENT ON COLUMN discover_candidates.reason IS 'Why it is listed, in words, e.g. "similar to 6 of your 28, 3 more than last month; 41.0M visits, rank #812 ↑" (the report''s number style).';

-- ---- sql/views/keyword_overlap.sql ----
-- keyword_overlap: for two watchlist domains that list each other as similar in the same
-- snapshot, the top keywords both rank for (matched case-insensitively, trimmed). Each pair
-- appears twice, once from each side (domain, other_domain), so filter on domain.
CREATE OR REPLACE VIEW keyword_overlap AS
-- pairs, then one side's keywords, then the other's, each step materialized: left to itself,
-- DuckDB 1.1 joined every domain's keywords with every other's on the keyword first (~160 M
-- rows estimated at 100,000 domains; 20 GB and 40 GB of spill when the report read it) and
-- only then kept the pairs.
WITH pairs AS MATERIALIZED (
    SELECT DISTINCT a.snapshot_month, a.domain, b.domain AS other_domain
    FROM similar_sites a
    JOIN similar_sites b
      ON b.snapshot_month = a.snapshot_month
     AND b.domain = regexp_replace(rtrim(lower(a.similar_domain), '.'), '^www\.', '')
     AND a.domain = regexp_replace(rtrim(lower(b.similar_domain), '.'), '^www\.', '')
    WHERE a.domain <> b.domain
),
one_side AS MATERIALIZED (
    SELECT p.snapshot_month, p.domain, p.other_domain, ka.keyword, lower(trim(ka.keyword)) AS matched,
           ka.position, ka.search_volume, ka.estimated_value_usd, ka.cpc_usd
    FROM pairs p
    JOIN keywords ka ON ka.snapshot_month = p.snapshot_month AND ka.domain = p.domain
)
SELECT
    o.snapshot_month,
    o.domain,
    o.other_domain,
    o.keyword,
    o.position AS domain_keyword_position,
    kb.position AS other_keyword_position,
    o.search_volume AS domain_search_volume,
    kb.search_volume AS other_search_volume,
    o.estimated_value_usd AS domain_estimated_value_usd,
    kb.estimated_value_usd AS other_estimated_value_usd,
    o.cpc_usd AS domain_cpc_usd,
    kb.cpc_usd AS other_cpc_usd
FROM one_side o
JOIN keywords kb ON kb.snapshot_month = o.snapshot_month AND kb.domain = o.other_domain
 AND lower(trim(kb.keyword)) = o.matched;

COMMENT ON VIEW keyword_overlap IS 'Shared top keywords of watchlist domains that list each other as similar in the same snapshot; one row per snapshot, domain, other_domain and keyword (each pair appears from both sides).';
COMMENT ON COLUMN keyword_overlap.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN keyword_overlap.domain IS 'Watchlist domain whose point of view the row takes.';
COMMENT ON COLUMN keyword_overlap.other_domain IS 'Watchlist domain that lists domain as similar and is listed by it.';
COMMENT ON COLUMN keyword_overlap.keyword IS 'Keyword as spelled in domain''s list (matched to other_domain''s case-insensitively, trimmed).';
COMMENT ON COLUMN keyword_overlap.domain_keyword_position IS 'Position of the keyword in domain''s top keywords, 1-based.';
COMMENT ON COLUMN keyword_overlap.other_keyword_position IS 'Position of the keyword in other_domain''s top keywords, 1-based.';
COMMENT ON COLUMN keyword_overlap.domain_search_volume IS 'Search volume reported with domain''s keyword (searches per month, estimate).';
COMMENT ON COLUMN keyword_overlap.other_search_volume IS 'Search volume reported with other_domain''s keyword (searches per month, estimate).';
COMMENT ON COLUMN keyword_overlap.domain_estimated_value_usd IS 'Estimated value of the keyword''s traffic to domain (US dollars, estimate).';
COMMENT ON COLUMN keyword_overlap.other_estimated_value_usd IS 'Estimated value of the keyword''s traffic to other_domain (US dollars, estimate).';
COMMENT ON COLUMN keyword_overlap.domain_cpc_usd IS 'Cost per click reported with domain''s keyword (US dollars); NULL when not returned.';
COMMENT ON COLUMN keyword_overlap.other_cpc_usd IS 'Cost per click reported with other_domain''s keyword (US dollars); NULL when not returned.';

-- ---- sql/views/latest_sites.sql ----
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

-- ---- sql/views/needs_attention.sql ----
-- needs_attention: for every complete month, the watchlist domains whose move is unusual for
-- them, one row per domain and reason, ranked within the month. Only rows that pass their test
-- appear: a quiet month has none (every surface then says "nothing unusual" in one line).
-- Defined once, as the table macro needs_attention_in(); the view needs_attention is that macro
-- with its defaults (every complete month, a size floor of 10,000 visits, a threshold of 3).
-- `sitewatch changes`, `show`, the report, the webhook and /metrics call the macro with the
-- config's attention.min_visits and attention.threshold, so every surface and an analyst's SQL
-- agree:
--
--   SELECT * FROM needs_attention_in(for_month := '2026-10', min_visits := 50000, threshold := 4);
--   SELECT * FROM needs_attention WHERE snapshot_month = '2026-10';
--
-- The month is a filter on the months the macro computes (never a value inside its steps), so
-- the macro may be called per month, through LATERAL too:
--
--   SELECT n.* FROM complete_months m, LATERAL needs_attention_in(for_month := m.snapshot_month) n;
--
-- A domain is listed (kind, metric) for:
--   vanished (visits)  its visits fell to 0 from at least min_visits the month before (traffic
--       history, or sites.total_visits against the previous complete month): always severity
--       high and first in the list; z is NULL (a fall to nothing has no ratio to measure).
--   visits_fell / visits_rose (visits)  its month-over-month log change in visits, measured
--       against its own earlier months: z = (ln(v_m / v_m-1) - median of its earlier monthly log
--       changes) / max(1.4826 × MAD of those changes, 0.02), over the up to 24 monthly changes
--       before the month that the warehouse holds (traffic_history across snapshots up to the
--       month, the newest snapshot with a value wins). Listed when |z| >= threshold, at least 6
--       earlier changes are known, and the month or the month before had at least min_visits
--       visits. The 0.02 floor (about ±2 %) keeps a giant whose months barely move from being
--       listed for an ordinary percent.
--   rank_lost (global_rank), ai_visits_fell (ai_visits), top_channel_fell (channel_share)
--       the global rank, the AI-referred visits, or the share of the channel that brought the
--       domain most visits in the previous complete month, compared with the previous complete
--       month. The warehouse holds one value a snapshot for these, so "unusual" is measured
--       against the other domains' moves in the same month: z = (move - median move) /
--       max(1.4826 × MAD of moves, floor), with move = ln(new rank / old rank) (floor 0.05),
--       ln(new AI visits / old) (floor 0.10; an AI count that fell to 0 or NULL counts as
--       ln(1/old)), or the change in share (floor 2 share points, and at least 5 points lost).
--       Listed when the domain lost (z >= threshold for a rank, z <= -threshold for the others)
--       and had at least min_visits visits (AI: and at least min_visits / 100 AI-referred visits).
--   data_missing (visits)  in the previous complete month's data but not in this month's
--       (rejected by the API, a fetch error, or no longer fetched), or loaded without a visits
--       figure for the month when the previous complete month had one.
--   quality_failed (no metric)  an error or warn finding of quality_checks about the domain.
--
-- Severity follows |z| in bands of the threshold: high at 2 × threshold or more, medium from the
-- threshold; vanished, missing data and quality errors are high, quality warnings medium.
-- Candidates not on the watchlist are never rows here (discover_candidates, "worth tracking"),
-- and the largest falls of the month are their own ranking (largest_falls_in, sql/views/changes.sql).
--
-- score orders the list: |z| for the measured reasons; 2 × threshold for missing data and a
-- quality error, the threshold for a quality warning. rank 1 is the first row of its month
-- (vanished first, then score, then the larger fall, then the larger domain, then name);
-- domain_rank numbers the month's domains by their first row, so a surface that groups the
-- reasons of a domain keeps the same order.
--
-- requires: _format.sql

-- The visits reasons' per-domain half (each domain's merged history, its consecutive-month
-- steps and their median and MAD) is the list's cost: 2.4 million history rows at 100,000
-- domains. It depends on the history alone, so it is computed once per complete month into
-- attention_visit_steps (sql/migrations/0011_attention_visit_steps.sql) and read from there
-- while the history it came from is unchanged: attention_visit_sources keeps, per month, each
-- read snapshot's row count and an order-free checksum of its rows, and a month whose sources
-- differ from the history now (a rerun, a rebuild, a restore, an analyst's UPDATE) is computed
-- from the history at the read, as if no cache existed. The tables are repeated here with IF NOT
-- EXISTS for the BI file's DuckDB, which has no migrations: there they stay empty and every month
-- is computed. A writer's open, the end of a run and `rebuild` store the months that lack rows
-- (warehouse.RefreshAttention).
CREATE TABLE IF NOT EXISTS attention_visit_steps (
    snapshot_month VARCHAR NOT NULL, domain VARCHAR NOT NULL,
    visits DOUBLE, prev_visits DOUBLE, center DOUBLE, n BIGINT, mad DOUBLE
);
CREATE TABLE IF NOT EXISTS attention_visit_sources (
    snapshot_month VARCHAR NOT NULL, source_month VARCHAR NOT NULL, row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

-- attention_history_sources(only_month): per complete month (or only_month) and each of the 26
-- snapshots its history reads (the month and the 25 before it), that snapshot's traffic_history
-- rows now: count and checksum (0 and 0 when it has none).
CREATE OR REPLACE MACRO attention_history_sources(only_month := NULL) AS TABLE
WITH snaps AS (
    SELECT c.snapshot_month, strftime(CAST(c.snapshot_month || '-01' AS DATE) - to_months(CAST(k AS INTEGER)), '%Y-%m') AS source_month
    FROM complete_months c, range(26) r(k)
    WHERE only_month IS NULL OR c.snapshot_month = CAST(only_month AS VARCHAR)
),
now AS (
    SELECT h.snapshot_month AS source_month, count(*) AS row_count, rows_checksum(hash(h.domain, h.month, h.visits)) AS checksum
    FROM traffic_history h
    GROUP BY h.snapshot_month
)
SELECT s.snapshot_month, s.source_month, coalesce(n.row_count, 0) AS row_count, CAST(coalesce(n.checksum, 0) AS UBIGINT) AS checksum
FROM snaps s LEFT JOIN now n USING (source_month);

-- attention_visit_months(only_month): the complete months (or only_month) and whether
-- attention_visit_steps holds them computed from the history as it is now.
CREATE OR REPLACE MACRO attention_visit_months(only_month := NULL) AS TABLE
SELECT s.snapshot_month, count(c.snapshot_month) = 26 AS cached
FROM attention_history_sources(only_month := only_month) s
LEFT JOIN attention_visit_sources c
       ON c.snapshot_month = s.snapshot_month AND c.source_month = s.source_month
      AND c.row_count = s.row_count AND c.checksum = s.checksum
GROUP BY s.snapshot_month;

-- attention_visit_steps_of(only_month, only_domain): per complete month (or only_month) and
-- domain (or only_domain) with a value for the month and the month before: both values and the
-- median, count and 1.4826 × MAD of the domain's earlier monthly log changes. Read from
-- attention_visit_steps for a month it holds as of the history now, else computed here:
--
-- Monthly visits as traffic_monthly merges them, limited to snapshots up to the month: one
-- value per month, domain and calendar month, the newest snapshot holding a value wins, over
-- the month and the 25 before it. The history is hash-joined on the month's 26 snapshot keys
-- instead of range-joined with the months (a sort of every history row). Consecutive calendar
-- months are a self-join (a hash join: no sort of every history, as a window would need; a
-- window measured twice as slow at 100,000 domains).
CREATE OR REPLACE MACRO attention_visit_steps_of(only_month := NULL, only_domain := NULL) AS TABLE
WITH m AS MATERIALIZED (
    SELECT snapshot_month, cached, CAST(snapshot_month || '-01' AS DATE) AS month_start
    FROM attention_visit_months(only_month := only_month)
),
hist_snaps AS MATERIALIZED (
    SELECT m.snapshot_month, m.month_start, CAST(m.month_start - INTERVAL 25 MONTH AS DATE) AS oldest_month,
           strftime(m.month_start - to_months(CAST(k AS INTEGER)), '%Y-%m') AS hist_snapshot
    FROM m, range(26) r(k)
    WHERE NOT m.cached
),
hist AS MATERIALIZED (
    SELECT s.snapshot_month, h.domain, h.month,
           arg_max(h.visits, h.snapshot_month) FILTER (WHERE h.visits IS NOT NULL) AS visits
    FROM traffic_history h
    JOIN hist_snaps s ON h.snapshot_month = s.hist_snapshot
    WHERE h.month <= s.month_start AND h.month >= s.oldest_month
      AND (only_domain IS NULL OR h.domain = CAST(only_domain AS VARCHAR))
    GROUP BY s.snapshot_month, h.domain, h.month
),
pairs AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.month, CAST(c.visits AS DOUBLE) AS visits, CAST(o.visits AS DOUBLE) AS prev_visits
    FROM hist c
    JOIN hist o ON o.snapshot_month = c.snapshot_month AND o.domain = c.domain AND o.month = CAST(c.month - INTERVAL 1 MONTH AS DATE)
),
past AS MATERIALIZED (
    SELECT snapshot_month, domain, ln(visits / prev_visits) AS r
    FROM pairs
    WHERE visits > 0 AND prev_visits > 0 AND month < CAST(snapshot_month || '-01' AS DATE)
),
center AS (
    SELECT snapshot_month, domain, median(r) AS center, count(*) AS n FROM past GROUP BY ALL
),
swing AS (
    SELECT s.snapshot_month, s.domain, any_value(a.center) AS center, any_value(a.n) AS n,
           1.4826 * median(abs(s.r - a.center)) AS mad
    FROM past s JOIN center a USING (snapshot_month, domain)
    GROUP BY s.snapshot_month, s.domain
)
SELECT c.snapshot_month, c.domain, c.visits, c.prev_visits, w.center, w.n, w.mad
FROM pairs c JOIN m USING (snapshot_month) LEFT JOIN swing w USING (snapshot_month, domain)
WHERE c.month = m.month_start
UNION ALL
SELECT v.snapshot_month, v.domain, v.visits, v.prev_visits, v.center, v.n, v.mad
FROM attention_visit_steps v SEMI JOIN m ON m.snapshot_month = v.snapshot_month AND m.cached
WHERE only_domain IS NULL OR v.domain = CAST(only_domain AS VARCHAR);

-- The rank, AI and channel reasons' watchlist-wide half (each month's median and MAD of every
-- domain's moves: 1 million channel-share moves at 100,000 domains) is computed once per complete
-- month into attention_month_stats (sql/migrations/0012_attention_month_stats.sql), so that a
-- one-domain question reads its own rows and a handful of stored figures. It is used while
-- attention_month_stat_sources matches sites and sources_share of the month and its previous
-- complete month (row count and order-free checksum of the columns read), else computed here.
CREATE TABLE IF NOT EXISTS attention_month_stats (
    snapshot_month VARCHAR NOT NULL, metric VARCHAR NOT NULL, channel VARCHAR, med DOUBLE, mad DOUBLE
);
CREATE TABLE IF NOT EXISTS attention_month_stat_sources (
    snapshot_month VARCHAR NOT NULL, source_table VARCHAR NOT NULL, source_month VARCHAR NOT NULL,
    row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

-- attention_stat_sources(only_month): per complete month (or only_month), sites and
-- sources_share of the month and of its previous complete month now: count and checksum.
CREATE OR REPLACE MACRO attention_stat_sources(only_month := NULL) AS TABLE
WITH stat_snaps AS MATERIALIZED (
    SELECT snapshot_month, snapshot_month AS source_month FROM complete_months
    WHERE only_month IS NULL OR snapshot_month = CAST(only_month AS VARCHAR)
    UNION ALL
    SELECT snapshot_month, previous_month FROM complete_months
    WHERE previous_month IS NOT NULL AND (only_month IS NULL OR snapshot_month = CAST(only_month AS VARCHAR))
),
stat_site_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count,
           rows_checksum(hash(s.domain, s.global_rank, s.ai_total_visits)) AS checksum
    FROM sites s SEMI JOIN stat_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
),
stat_share_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count,
           rows_checksum(hash(s.domain, s.channel, s.share)) AS checksum
    FROM sources_share s SEMI JOIN stat_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
)
SELECT n.snapshot_month, 'sites' AS source_table, n.source_month, coalesce(x.row_count, 0) AS row_count,
       CAST(coalesce(x.checksum, 0) AS UBIGINT) AS checksum
FROM stat_snaps n LEFT JOIN stat_site_now x USING (source_month)
UNION ALL
SELECT n.snapshot_month, 'sources_share', n.source_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM stat_snaps n LEFT JOIN stat_share_now x USING (source_month);

-- attention_stat_months(only_month): the complete months (or only_month) and whether
-- attention_month_stats holds them computed from exactly the sources as they are now.
CREATE OR REPLACE MACRO attention_stat_months(only_month := NULL) AS TABLE
WITH stat_stored AS (
    SELECT snapshot_month, count(*) AS n FROM attention_month_stat_sources GROUP BY ALL
)
SELECT s.snapshot_month, count(c.snapshot_month) = count(*) AND any_value(coalesce(st.n, 0)) = count(*) AS cached
FROM attention_stat_sources(only_month := only_month) s
LEFT JOIN attention_month_stat_sources c
       ON c.snapshot_month = s.snapshot_month AND c.source_table = s.source_table AND c.source_month = s.source_month
      AND c.row_count = s.row_count AND c.checksum = s.checksum
LEFT JOIN stat_stored st ON st.snapshot_month = s.snapshot_month
GROUP BY s.snapshot_month;

-- attention_month_stats_of(only_month): per complete month (or only_month), the median and
-- 1.4826 × MAD (before the floor) of the watchlist's moves against the previous complete month:
-- global_rank ln(new / old), ai_visits ln(max(new, 1) / old) and channel_share per channel
-- (new - old share). Read from attention_month_stats for a month it holds as of the sources
-- now, else computed here from every domain of the month.
CREATE OR REPLACE MACRO attention_month_stats_of(only_month := NULL) AS TABLE
WITH stat_m AS MATERIALIZED (
    SELECT a.snapshot_month, a.cached, c.previous_month
    FROM attention_stat_months(only_month := only_month) a JOIN complete_months c USING (snapshot_month)
),
stat_pair AS (
    SELECT c.snapshot_month, c.global_rank, o.global_rank AS prev_rank, c.ai_total_visits AS ai, o.ai_total_visits AS prev_ai
    FROM sites c
    JOIN stat_m ON c.snapshot_month = stat_m.snapshot_month AND NOT stat_m.cached
    JOIN sites o ON o.snapshot_month = stat_m.previous_month AND o.domain = c.domain
),
stat_rank_moves AS MATERIALIZED (
    SELECT snapshot_month, ln(global_rank::DOUBLE / prev_rank) AS m FROM stat_pair WHERE global_rank > 0 AND prev_rank > 0
),
stat_rank_med AS (
    SELECT snapshot_month, median(m) AS med FROM stat_rank_moves GROUP BY ALL
),
stat_ai_moves AS MATERIALIZED (
    SELECT snapshot_month, ln(greatest(coalesce(ai, 0), 1)::DOUBLE / prev_ai) AS m FROM stat_pair WHERE prev_ai > 0
),
stat_ai_med AS (
    SELECT snapshot_month, median(m) AS med FROM stat_ai_moves GROUP BY ALL
),
-- The month's shares are not materialized: the join streams them against the previous month's
-- hash table (both held at once need more than the load's memory limit at 100,000 domains).
stat_cur_shares AS (
    SELECT stat_m.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN stat_m ON s.snapshot_month = stat_m.snapshot_month AND NOT stat_m.cached
    WHERE s.share IS NOT NULL AND stat_m.previous_month IS NOT NULL
),
stat_prev_shares AS (
    SELECT stat_m.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN stat_m ON s.snapshot_month = stat_m.previous_month AND NOT stat_m.cached
    WHERE s.share IS NOT NULL
),
stat_channel_moves AS MATERIALIZED (
    SELECT s.snapshot_month, s.channel, s.share - o.share AS m
    FROM stat_cur_shares s JOIN stat_prev_shares o USING (snapshot_month, domain, channel)
),
stat_channel_med AS (
    SELECT snapshot_month, channel, median(m) AS med FROM stat_channel_moves GROUP BY ALL
)
SELECT r.snapshot_month, 'global_rank' AS metric, CAST(NULL AS VARCHAR) AS channel, any_value(x.med) AS med,
       1.4826 * median(abs(r.m - x.med)) AS mad
FROM stat_rank_moves r JOIN stat_rank_med x USING (snapshot_month) GROUP BY r.snapshot_month
UNION ALL
SELECT a.snapshot_month, 'ai_visits', NULL, any_value(x.med), 1.4826 * median(abs(a.m - x.med))
FROM stat_ai_moves a JOIN stat_ai_med x USING (snapshot_month) GROUP BY a.snapshot_month
UNION ALL
SELECT c.snapshot_month, 'channel_share', c.channel, any_value(x.med), 1.4826 * median(abs(c.m - x.med))
FROM stat_channel_moves c JOIN stat_channel_med x USING (snapshot_month, channel) GROUP BY c.snapshot_month, c.channel
UNION ALL
SELECT v.snapshot_month, v.metric, v.channel, v.med, v.mad
FROM attention_month_stats v SEMI JOIN stat_m ON stat_m.snapshot_month = v.snapshot_month AND stat_m.cached;

-- Each complete month's whole list is stored too (attention_lists, migration 0012), for the
-- settings a writer stores it with (the defaults, and the config's attention settings): the
-- list of a complete month changes only when its month's or the months before's data changes,
-- and a stored list makes the view, a listed domain's place and `sitewatch show` read a handful
-- of rows instead of computing 1 million channel moves. attention_list_sources keeps, per month
-- and settings, each source's row count and order-free checksum at the time it was stored: the
-- 26 history snapshots, sites and sources_share of the month and its previous complete month,
-- the month's fetch_errors and quality_checks, and one 'definition' row (the previous complete
-- month, and the stamp of the view definitions, attention_definition(): a sitewatch with other
-- definitions never reads a list the old ones made). A month whose sources differ now is
-- computed as if nothing were stored. A writer's open, the end of a run and `rebuild` store the
-- lists (warehouse.RefreshAttention).
CREATE TABLE IF NOT EXISTS attention_lists (
    snapshot_month VARCHAR NOT NULL, floor_visits DOUBLE NOT NULL, z_min DOUBLE NOT NULL,
    previous_month VARCHAR, domain VARCHAR NOT NULL, kind VARCHAR NOT NULL, metric VARCHAR, channel VARCHAR,
    value DOUBLE, previous_value DOUBLE, change_pct DOUBLE, change_points DOUBLE, z DOUBLE,
    severity VARCHAR NOT NULL, reason VARCHAR NOT NULL, score DOUBLE, rank BIGINT, domain_rank BIGINT
);
CREATE TABLE IF NOT EXISTS attention_list_sources (
    snapshot_month VARCHAR NOT NULL, floor_visits DOUBLE NOT NULL, z_min DOUBLE NOT NULL,
    source_table VARCHAR NOT NULL, source_month VARCHAR NOT NULL, row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

-- attention_definition(): the stamp of the view and macro definitions a writer created (a
-- writer replaces this macro with its stamp right after creating them: warehouse createViews),
-- so a stored list is read only by the definitions that computed it. Elsewhere (the BI file's
-- DuckDB) it stays 'unstamped'.
CREATE OR REPLACE MACRO attention_definition() AS 'unstamped';

-- attention_list_sources_now(only_month): per complete month (or only_month), every source of
-- its list as it is now: row count and checksum (0 and 0 when none).
CREATE OR REPLACE MACRO attention_list_sources_now(only_month := NULL) AS TABLE
WITH list_m AS MATERIALIZED (
    SELECT snapshot_month, previous_month FROM complete_months
    WHERE only_month IS NULL OR snapshot_month = CAST(only_month AS VARCHAR)
),
list_snaps AS MATERIALIZED (
    SELECT snapshot_month, snapshot_month AS source_month FROM list_m
    UNION ALL
    SELECT snapshot_month, previous_month FROM list_m WHERE previous_month IS NOT NULL
),
list_site_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count,
           rows_checksum(hash(s.domain, s.total_visits, s.global_rank, s.ai_total_visits)) AS checksum
    FROM sites s SEMI JOIN list_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
),
list_share_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count, rows_checksum(hash(s.domain, s.channel, s.share)) AS checksum
    FROM sources_share s SEMI JOIN list_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
),
list_error_now AS (
    SELECT e.snapshot_month, count(*) AS row_count,
           rows_checksum(hash(e.domain, e.http_status, e.endpoint, e.code, e.occurred_at)) AS checksum
    FROM fetch_errors e SEMI JOIN list_m USING (snapshot_month)
    GROUP BY e.snapshot_month
),
list_quality_now AS (
    SELECT q.snapshot_month, count(*) AS row_count,
           rows_checksum(hash(q.domain, q.severity, q."check", q.table_name, q.observed, q.expected)) AS checksum
    FROM quality_checks q SEMI JOIN list_m USING (snapshot_month)
    GROUP BY q.snapshot_month
),
list_definitions AS (
    SELECT hash(attention_definition()) AS checksum
)
SELECT snapshot_month, 'traffic_history' AS source_table, source_month, row_count, checksum
FROM attention_history_sources(only_month := only_month)
UNION ALL
SELECT n.snapshot_month, 'sites', n.source_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_snaps n LEFT JOIN list_site_now x USING (source_month)
UNION ALL
SELECT n.snapshot_month, 'sources_share', n.source_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_snaps n LEFT JOIN list_share_now x USING (source_month)
UNION ALL
SELECT m.snapshot_month, 'fetch_errors', m.snapshot_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_m m LEFT JOIN list_error_now x USING (snapshot_month)
UNION ALL
SELECT m.snapshot_month, 'quality_checks', m.snapshot_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_m m LEFT JOIN list_quality_now x USING (snapshot_month)
UNION ALL
SELECT m.snapshot_month, 'definition', coalesce(m.previous_month, ''), 0, CAST(d.checksum AS UBIGINT)
FROM list_m m, list_definitions d;

-- attention_list_months(for_floor, for_z, only_month): the complete months (or only_month) and
-- whether attention_lists holds their list for these settings (size floor, threshold) computed
-- from exactly the sources as they are now.
CREATE OR REPLACE MACRO attention_list_months(for_floor, for_z, only_month := NULL) AS TABLE
WITH list_kept AS (
    SELECT snapshot_month, count(*) AS n FROM attention_list_sources
    WHERE floor_visits = CAST(for_floor AS DOUBLE) AND z_min = CAST(for_z AS DOUBLE)
    GROUP BY ALL
)
SELECT s.snapshot_month, count(c.snapshot_month) = count(*) AND any_value(coalesce(k.n, 0)) = count(*) AS stored
FROM attention_list_sources_now(only_month := only_month) s
LEFT JOIN attention_list_sources c
       ON c.snapshot_month = s.snapshot_month AND c.source_table = s.source_table AND c.source_month = s.source_month
      AND c.row_count = s.row_count AND c.checksum = s.checksum
      AND c.floor_visits = CAST(for_floor AS DOUBLE) AND c.z_min = CAST(for_z AS DOUBLE)
LEFT JOIN list_kept k ON k.snapshot_month = s.snapshot_month
GROUP BY s.snapshot_month;

-- needs_attention_all(min_visits, threshold, only_month, only_domain): every complete month, or
-- only_month alone when given (a constant: sitewatch reads one month this way at half the cost
-- of two). only_domain (a constant) returns that domain's rows only, reading only its own
-- history: whether it is listed, and why, at a fraction of the cost (`sitewatch show` asks this
-- first). Its rank and domain_rank are then NULL: a place in the list needs every domain's rows.
-- A month whose list attention_lists holds for these settings, as of its sources now, is read
-- from there (list_m); the others are computed (p holds only those).
CREATE OR REPLACE MACRO needs_attention_all(min_visits, threshold, only_month := NULL, only_domain := NULL) AS TABLE
WITH list_m AS MATERIALIZED (
    SELECT * FROM attention_list_months(coalesce(min_visits, 10000), coalesce(threshold, 3), only_month := only_month)
),
p AS MATERIALIZED (
    SELECT c.snapshot_month, c.previous_month,
           CAST(c.snapshot_month || '-01' AS DATE) AS month_start,
           strftime(CAST(c.snapshot_month || '-01' AS DATE) - INTERVAL 25 MONTH, '%Y-%m') AS oldest_snapshot,
           CAST(coalesce(min_visits, 10000) AS DOUBLE) AS floor_visits,
           CAST(coalesce(threshold, 3) AS DOUBLE) AS z_min
    FROM complete_months c
    SEMI JOIN list_m l ON l.snapshot_month = c.snapshot_month AND NOT l.stored
),
cur_sites AS MATERIALIZED (
    SELECT s.snapshot_month, s.domain, s.total_visits, s.global_rank, s.ai_total_visits
    FROM sites s JOIN p ON s.snapshot_month = p.snapshot_month
    WHERE only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR)
),
prev_sites AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.total_visits, s.global_rank, s.ai_total_visits
    FROM sites s JOIN p ON s.snapshot_month = p.previous_month
    WHERE only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR)
),
-- Each domain's visits in the month and the month before, with its usual monthly swing: from
-- attention_visit_steps while the history is unchanged, else from the history here.
month_steps AS MATERIALIZED (
    SELECT * FROM attention_visit_steps_of(only_month := only_month, only_domain := only_domain)
),
visit_z AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.visits, c.prev_visits, ln(c.visits / c.prev_visits) AS r, c.center, c.n,
           greatest(c.mad, 0.02) AS sd,
           (ln(c.visits / c.prev_visits) - c.center) / greatest(c.mad, 0.02) AS z
    FROM month_steps c
    SEMI JOIN cur_sites s ON s.snapshot_month = c.snapshot_month AND s.domain = c.domain
    WHERE c.visits > 0 AND c.prev_visits > 0
),
visit_rows AS (
    SELECT v.snapshot_month, v.domain,
           CASE WHEN v.z < 0 THEN 'visits_fell' ELSE 'visits_rose' END AS kind,
           'visits' AS metric, CAST(NULL AS VARCHAR) AS channel,
           round(v.visits) AS value, round(v.prev_visits) AS previous_value,
           100 * (v.visits / v.prev_visits - 1) AS change_pct, CAST(NULL AS DOUBLE) AS change_points,
           v.z, abs(v.z) AS score, CASE WHEN abs(v.z) >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
           CASE
               WHEN v.r < 0 THEN 'fell ' || printf('%.1f', 100 * (1 - exp(v.r))) || '%'
               WHEN v.z < 0 THEN 'rose only ' || printf('%.1f', 100 * (exp(v.r) - 1)) || '%'
               ELSE 'rose ' || printf('%.1f', 100 * (exp(v.r) - 1)) || '%'
           END
           || ' (' || fmt_count(v.prev_visits) || ' → ' || fmt_count(v.visits) || ' visits)'
           || ' — its months usually move '
           || CASE WHEN abs(v.center) >= v.sd / 2 THEN replace(printf('%+.1f', 100 * (exp(v.center) - 1)), '-', '−') || '% ' ELSE '' END
           || '±' || printf('%.1f', 100 * (exp(v.sd) - 1)) || '%' AS reason,
           0 AS tier, greatest(v.visits, v.prev_visits) AS size
    FROM visit_z v JOIN p USING (snapshot_month)
    WHERE abs(v.z) >= p.z_min AND v.n >= 6 AND greatest(v.visits, v.prev_visits) >= p.floor_visits
),
-- A fall to zero: in the traffic history (the month's value 0 after a positive one), or in
-- sites.total_visits against the previous complete month.
zero_falls AS (
    SELECT snapshot_month, domain, prev_visits FROM month_steps
    SEMI JOIN cur_sites c USING (snapshot_month, domain)
    WHERE visits = 0 AND prev_visits > 0
    UNION ALL
    SELECT c.snapshot_month, c.domain, o.total_visits
    FROM cur_sites c JOIN prev_sites o USING (snapshot_month, domain)
    WHERE c.total_visits = 0 AND o.total_visits > 0
),
vanished_rows AS (
    SELECT z.snapshot_month, z.domain, 'vanished' AS kind, 'visits' AS metric, CAST(NULL AS VARCHAR) AS channel,
           0.0 AS value, round(max(z.prev_visits)) AS previous_value,
           -100.0 AS change_pct, CAST(NULL AS DOUBLE) AS change_points,
           CAST(NULL AS DOUBLE) AS z, 2 * any_value(p.z_min) AS score, 'high' AS severity,
           'vanished: 0 visits this month, ' || fmt_count(max(z.prev_visits)) || ' the month before' AS reason,
           -1 AS tier, max(z.prev_visits) AS size
    FROM zero_falls z JOIN p USING (snapshot_month)
    GROUP BY z.snapshot_month, z.domain
    HAVING max(z.prev_visits) >= any_value(p.floor_visits)
),
pair AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.total_visits AS visits, o.total_visits AS prev_visits,
           c.global_rank, o.global_rank AS prev_rank,
           c.ai_total_visits AS ai, o.ai_total_visits AS prev_ai
    FROM cur_sites c JOIN prev_sites o USING (snapshot_month, domain)
),
rank_moves AS MATERIALIZED (
    SELECT *, ln(global_rank::DOUBLE / prev_rank) AS m
    FROM pair WHERE global_rank > 0 AND prev_rank > 0
),
-- The watchlist's medians and MADs of the month (attention_month_stats_of), with each reason's floor.
month_stats AS MATERIALIZED (
    SELECT * FROM attention_month_stats_of(only_month := only_month)
),
rank_stats AS (
    SELECT snapshot_month, med, greatest(mad, 0.05) AS sd FROM month_stats WHERE metric = 'global_rank'
),
rank_rows AS (
    SELECT r.snapshot_month, r.domain, 'rank_lost' AS kind, 'global_rank' AS metric, CAST(NULL AS VARCHAR) AS channel,
           CAST(r.global_rank AS DOUBLE) AS value, CAST(r.prev_rank AS DOUBLE) AS previous_value,
           100 * (r.global_rank::DOUBLE / r.prev_rank - 1) AS change_pct, CAST(NULL AS DOUBLE) AS change_points,
           (r.m - s.med) / s.sd AS z, (r.m - s.med) / s.sd AS score,
           CASE WHEN (r.m - s.med) / s.sd >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
           'lost ' || printf('%,d', r.global_rank - r.prev_rank) || ' places in the global rank ('
           || fmt_rank(r.prev_rank) || ' → ' || fmt_rank(r.global_rank) || ')'
           || ' — the watchlist''s ranks moved ±' || printf('%.1f', 100 * (exp(s.sd) - 1)) || '% this month' AS reason,
           0 AS tier, coalesce(r.visits, r.prev_visits) AS size
    FROM rank_moves r JOIN rank_stats s USING (snapshot_month) JOIN p USING (snapshot_month)
    WHERE (r.m - s.med) / s.sd >= p.z_min AND r.global_rank > r.prev_rank AND coalesce(r.visits, r.prev_visits) >= p.floor_visits
),
ai_moves AS MATERIALIZED (
    SELECT pr.*, ln(greatest(coalesce(pr.ai, 0), 1)::DOUBLE / pr.prev_ai) AS m
    FROM pair pr WHERE pr.prev_ai > 0
),
ai_stats AS (
    SELECT snapshot_month, med, greatest(mad, 0.10) AS sd FROM month_stats WHERE metric = 'ai_visits'
),
ai_rows AS (
    SELECT a.snapshot_month, a.domain, 'ai_visits_fell' AS kind, 'ai_visits' AS metric, CAST(NULL AS VARCHAR) AS channel,
           CAST(coalesce(a.ai, 0) AS DOUBLE) AS value, CAST(a.prev_ai AS DOUBLE) AS previous_value,
           100 * (coalesce(a.ai, 0)::DOUBLE / a.prev_ai - 1) AS change_pct, CAST(NULL AS DOUBLE) AS change_points,
           (a.m - s.med) / s.sd AS z, -(a.m - s.med) / s.sd AS score,
           CASE WHEN -(a.m - s.med) / s.sd >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
           'AI-referred visits fell ' || printf('%.1f', 100 * (1 - coalesce(a.ai, 0)::DOUBLE / a.prev_ai)) || '% ('
           || fmt_count(a.prev_ai) || ' → ' || fmt_count(coalesce(a.ai, 0)) || ')'
           || ' — the watchlist''s moved ±' || printf('%.1f', 100 * (exp(s.sd) - 1)) || '% this month' AS reason,
           0 AS tier, coalesce(a.visits, a.prev_visits) AS size
    FROM ai_moves a JOIN ai_stats s USING (snapshot_month) JOIN p USING (snapshot_month)
    WHERE (a.m - s.med) / s.sd <= -p.z_min AND coalesce(a.visits, a.prev_visits) >= p.floor_visits AND a.prev_ai >= p.floor_visits / 100
),
-- Each side's shares picked by its month first: joined on (domain, channel) with the months
-- as a later filter, every month's shares met every other month's (4 million rows for 1 million
-- at 100,000 domains, 7 s of the list's operator time).
cur_shares AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN p ON s.snapshot_month = p.snapshot_month
    WHERE s.share IS NOT NULL AND p.previous_month IS NOT NULL
      AND (only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR))
),
prev_shares AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN p ON s.snapshot_month = p.previous_month
    WHERE s.share IS NOT NULL
      AND (only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR))
),
channel_moves AS MATERIALIZED (
    SELECT s.snapshot_month, s.domain, s.channel, o.share AS prev_share, s.share, s.share - o.share AS m
    FROM cur_shares s
    JOIN prev_shares o USING (snapshot_month, domain, channel)
),
channel_stats AS (
    SELECT snapshot_month, channel, med, greatest(mad, 0.02) AS sd FROM month_stats WHERE metric = 'channel_share'
),
-- The channel falls that pass their test, whichever channel was the domain's top: the top
-- channel is then found for these few domains only, not for every domain of the month.
channel_falls AS MATERIALIZED (
    SELECT c.*, s.med, s.sd
    FROM channel_moves c JOIN channel_stats s USING (snapshot_month, channel) JOIN p USING (snapshot_month)
    WHERE (c.m - s.med) / s.sd <= -p.z_min AND c.m <= -0.05
),
-- The channel with the largest share the month before (the first by name on a tie): a max and
-- a min over plain columns, not an arg_min over a struct.
top_share AS (
    SELECT snapshot_month, domain, max(share) AS share
    FROM prev_shares SEMI JOIN channel_falls USING (snapshot_month, domain)
    GROUP BY ALL
),
top_channel AS (
    SELECT snapshot_month, domain, min(channel) AS channel
    FROM prev_shares JOIN top_share USING (snapshot_month, domain, share)
    GROUP BY ALL
),
channel_rows AS (
    SELECT c.snapshot_month, c.domain, 'top_channel_fell' AS kind, 'channel_share' AS metric, c.channel,
           100 * c.share AS value, 100 * c.prev_share AS previous_value,
           CAST(NULL AS DOUBLE) AS change_pct, 100 * c.m AS change_points,
           (c.m - c.med) / c.sd AS z, -(c.m - c.med) / c.sd AS score,
           CASE WHEN -(c.m - c.med) / c.sd >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
           CASE c.channel
               WHEN 'organic_search' THEN 'Organic search' WHEN 'paid_search' THEN 'Paid search'
               WHEN 'organic_social' THEN 'Organic social' WHEN 'paid_social' THEN 'Paid social'
               WHEN 'generative_ai' THEN 'Generative AI' WHEN 'display_ads' THEN 'Display ads'
               ELSE upper(c.channel[1]) || c.channel[2:] END
           || ', its top channel, fell from ' || printf('%.1f', 100 * c.prev_share) || '% to '
           || printf('%.1f', 100 * c.share) || '% of its visits'
           || ' — the watchlist''s share of it moved ±' || printf('%.1f', 100 * c.sd) || ' points this month' AS reason,
           0 AS tier, coalesce(pr.visits, pr.prev_visits) AS size
    FROM channel_falls c
    JOIN top_channel t USING (snapshot_month, domain, channel)
    JOIN pair pr USING (snapshot_month, domain)
    JOIN p USING (snapshot_month)
    WHERE coalesce(pr.visits, pr.prev_visits) >= p.floor_visits
),
last_error AS (
    SELECT e.snapshot_month, e.domain, arg_max(e.http_status, e.occurred_at) AS http_status,
           arg_max(e.endpoint, e.occurred_at) AS endpoint, arg_max(e.code, e.occurred_at) AS code
    FROM fetch_errors e SEMI JOIN p USING (snapshot_month)
    GROUP BY e.snapshot_month, e.domain
),
missing_rows AS (
    SELECT o.snapshot_month, o.domain, 'data_missing' AS kind, 'visits' AS metric, CAST(NULL AS VARCHAR) AS channel,
           CAST(NULL AS DOUBLE) AS value, round(o.total_visits) AS previous_value,
           CAST(NULL AS DOUBLE) AS change_pct, CAST(NULL AS DOUBLE) AS change_points,
           CAST(NULL AS DOUBLE) AS z, 2 * p.z_min AS score, 'high' AS severity,
           'no data this month: '
           || CASE WHEN e.http_status = 400 THEN 'the API rejected the domain (400' || coalesce(', ' || e.code, '') || ')'
                   WHEN e.domain IS NOT NULL THEN 'fetching its ' || e.endpoint || ' failed'
                        || coalesce(' (HTTP ' || e.http_status || coalesce(', ' || e.code, '') || ')', '')
                   ELSE 'not loaded (no longer on the watchlist, or not fetched)' END
           || ' — it had ' || coalesce(fmt_count(o.total_visits) || ' visits', 'data') || ' in ' || p.previous_month AS reason,
           0 AS tier, o.total_visits AS size
    FROM prev_sites o
    JOIN p USING (snapshot_month)
    LEFT JOIN last_error e USING (snapshot_month, domain)
    ANTI JOIN cur_sites c USING (snapshot_month, domain)
    UNION ALL
    SELECT c.snapshot_month, c.domain, 'data_missing', 'visits', NULL, NULL, round(o.total_visits), NULL, NULL, NULL,
           2 * p.z_min, 'high',
           'no visits figure this month — it had ' || fmt_count(o.total_visits) || ' visits in ' || p.previous_month,
           0, o.total_visits
    FROM cur_sites c JOIN prev_sites o USING (snapshot_month, domain) JOIN p USING (snapshot_month)
    WHERE c.total_visits IS NULL AND o.total_visits IS NOT NULL
),
quality_rows AS (
    SELECT q.snapshot_month, q.domain, 'quality_failed' AS kind, CAST(NULL AS VARCHAR) AS metric, CAST(NULL AS VARCHAR) AS channel,
           CAST(NULL AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS previous_value,
           CAST(NULL AS DOUBLE) AS change_pct, CAST(NULL AS DOUBLE) AS change_points, CAST(NULL AS DOUBLE) AS z,
           CASE WHEN bool_or(q.severity = 'error') THEN 2 * any_value(p.z_min) ELSE any_value(p.z_min) END AS score,
           CASE WHEN bool_or(q.severity = 'error') THEN 'high' ELSE 'medium' END AS severity,
           CASE WHEN count(*) = 1 THEN 'failed the quality check ' ELSE 'failed ' || count(*) || ' quality checks: ' END
           || string_agg(q."check" || ' on ' || q.table_name || ' (' || q.severity || ': ' || q.observed || ', expected ' || q.expected || ')', '; '
                         ORDER BY q.severity = 'error' DESC, q."check", q.table_name) AS reason,
           0 AS tier, any_value(coalesce(c.total_visits, o.total_visits)) AS size
    FROM quality_checks q
    JOIN p USING (snapshot_month)
    LEFT JOIN cur_sites c USING (snapshot_month, domain)
    LEFT JOIN prev_sites o USING (snapshot_month, domain)
    WHERE q.domain IS NOT NULL AND q.severity IN ('error', 'warn')
    GROUP BY q.snapshot_month, q.domain
),
all_rows AS MATERIALIZED (
    SELECT * FROM vanished_rows
    UNION ALL SELECT * FROM visit_rows
    UNION ALL SELECT * FROM rank_rows
    UNION ALL SELECT * FROM ai_rows
    UNION ALL SELECT * FROM channel_rows
    UNION ALL SELECT * FROM missing_rows
    UNION ALL SELECT * FROM quality_rows
),
ranked AS (
    SELECT a.*,
           row_number() OVER (PARTITION BY a.snapshot_month
                              ORDER BY a.tier, a.score DESC, coalesce(a.change_pct, a.change_points) ASC NULLS LAST,
                                       a.size DESC NULLS LAST, a.domain, a.kind) AS rank
    FROM all_rows a
),
firsts AS (
    SELECT *, min(rank) OVER (PARTITION BY snapshot_month, domain) AS domain_first FROM ranked
)
SELECT
    r.snapshot_month,
    p.previous_month,
    r.domain,
    r.kind,
    r.metric,
    r.channel,
    r.value,
    r.previous_value,
    r.change_pct,
    r.change_points,
    round(r.z, 2) AS z,
    r.severity,
    r.reason,
    r.score,
    CASE WHEN only_domain IS NULL THEN r.rank END AS rank,
    CASE WHEN only_domain IS NULL THEN CAST(dense_rank() OVER (PARTITION BY r.snapshot_month ORDER BY r.domain_first) AS BIGINT) END AS domain_rank,
    p.floor_visits AS min_visits,
    p.z_min AS threshold
FROM firsts r JOIN p USING (snapshot_month)
WHERE only_domain IS NULL OR r.domain = CAST(only_domain AS VARCHAR)
UNION ALL
SELECT l.snapshot_month, l.previous_month, l.domain, l.kind, l.metric, l.channel, l.value, l.previous_value,
       l.change_pct, l.change_points, l.z, l.severity, l.reason, l.score,
       CASE WHEN only_domain IS NULL THEN l.rank END, CASE WHEN only_domain IS NULL THEN l.domain_rank END,
       l.floor_visits, l.z_min
FROM attention_lists l
SEMI JOIN list_m m ON m.snapshot_month = l.snapshot_month AND m.stored
WHERE l.floor_visits = CAST(coalesce(min_visits, 10000) AS DOUBLE) AND l.z_min = CAST(coalesce(threshold, 3) AS DOUBLE)
  AND (only_domain IS NULL OR l.domain = CAST(only_domain AS VARCHAR));

-- needs_attention_in filters needs_attention_all by month: the month never enters the steps,
-- so a caller may pass a column (LATERAL) as well as a constant.
CREATE OR REPLACE MACRO needs_attention_in(for_month := NULL, min_visits := NULL, threshold := NULL) AS TABLE
SELECT * FROM needs_attention_all(min_visits, threshold) n
WHERE for_month IS NULL OR n.snapshot_month = CAST(for_month AS VARCHAR)
ORDER BY n.snapshot_month, n.rank;

CREATE OR REPLACE VIEW needs_attention AS SELECT * FROM needs_attention_in();

COMMENT ON VIEW needs_attention IS 'For every complete month, the watchlist domains whose move is unusual for them (visits against their own earlier months, a fall to zero; rank, AI-referred visits and top channel against the watchlist''s moves), whose data went missing, or that failed a quality check: one row per month, domain and reason, with one column per unit and the reason in words, ranked within the month (rank 1 first). Only rows that pass their test: a quiet month has none. Candidates not on the watchlist are never rows (discover_candidates). Defaults: size floor 10,000 visits, threshold 3; the table macro needs_attention_in(for_month, min_visits, threshold) takes other values (sitewatch passes attention.min_visits and attention.threshold from the config).';
COMMENT ON COLUMN needs_attention.snapshot_month IS 'Complete snapshot (YYYY-MM) the row is for; filter on it for one month.';
COMMENT ON COLUMN needs_attention.previous_month IS 'The complete snapshot before it (YYYY-MM) that rank, AI, channel, zero and missing-data reasons compare with; NULL when there is none.';
COMMENT ON COLUMN needs_attention.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN needs_attention.kind IS 'vanished (visits fell to 0), visits_fell, visits_rose (unusual for the domain''s own months), rank_lost, ai_visits_fell, top_channel_fell (unusual against the watchlist this month), data_missing, or quality_failed.';
COMMENT ON COLUMN needs_attention.metric IS 'What value and previous_value measure: visits, global_rank, ai_visits or channel_share; NULL for quality_failed.';
COMMENT ON COLUMN needs_attention.channel IS 'The channel of a channel_share row (a key of sources_share, e.g. organic_search); NULL otherwise.';
COMMENT ON COLUMN needs_attention.value IS 'The metric in the month, in its unit: visits (whole visits, estimate), global_rank (1 = most visited), ai_visits (whole visits), channel_share (percent 0-100); NULL when missing.';
COMMENT ON COLUMN needs_attention.previous_value IS 'The metric the month before, same unit (visits: the previous calendar month of the traffic history; the others: the previous complete month).';
COMMENT ON COLUMN needs_attention.change_pct IS 'For visits, global_rank and ai_visits: value / previous_value - 1 in percent (-35.0 = a 35 % fall; -100 = vanished; for a rank, positive = worse); NULL for other metrics.';
COMMENT ON COLUMN needs_attention.change_points IS 'For channel_share: value - previous_value in percentage points (-25.0 = 25 points lost); NULL for other metrics.';
COMMENT ON COLUMN needs_attention.z IS 'The move in units of its usual swing: (move - median move) / max(1.4826 × MAD, floor); negative = down (a rank''s z is positive when it worsened). NULL for vanished, data_missing and quality_failed.';
COMMENT ON COLUMN needs_attention.severity IS 'high when |z| >= 2 × threshold, and always for vanished, missing data and quality errors; medium when |z| >= threshold and for quality warnings. The same words on every surface.';
COMMENT ON COLUMN needs_attention.reason IS 'Why the domain is listed, in words, e.g. "fell 35.0% (2.00M → 1.30M visits) — its months usually move ±3.0%"; figures in the number style of the report.';
COMMENT ON COLUMN needs_attention.score IS 'What the list is ordered by after vanished rows (larger first): |z| for the measured reasons, 2 × threshold for vanished, missing data and quality errors, the threshold for quality warnings.';
COMMENT ON COLUMN needs_attention.rank IS 'Position in the month''s list, 1 = first: vanished first, then by score, then the larger fall, then the larger domain, then domain and kind.';
COMMENT ON COLUMN needs_attention.domain_rank IS 'Position of the domain in the month''s list, 1 = first: the domains ordered by their best-ranked row, so a surface that groups a domain''s reasons keeps the list''s order.';
COMMENT ON COLUMN needs_attention.min_visits IS 'The size floor the list was computed with (visits in the month or the month before).';
COMMENT ON COLUMN needs_attention.threshold IS 'The |z| a move must reach to be listed.';

-- ---- sql/views/top_countries.sql ----
-- top_countries: each domain's visitor countries ranked by share, with ISO names.
CREATE OR REPLACE VIEW top_countries AS
SELECT
    g.snapshot_month,
    g.domain,
    row_number() OVER (
        PARTITION BY g.snapshot_month, g.domain
        ORDER BY g.share DESC NULLS LAST, g.country_code) AS country_position,
    upper(g.country_code) AS country_code,
    c.alpha3 AS country_alpha3,
    c.name AS country_name,
    g.share
FROM geography_share g
LEFT JOIN countries c ON c.alpha2 = upper(g.country_code);

COMMENT ON VIEW top_countries IS 'Visitor countries per domain and snapshot, ranked by share (1 = largest), with names from countries.';
COMMENT ON COLUMN top_countries.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN top_countries.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN top_countries.country_position IS 'Position by share within the domain and snapshot, 1 = largest share (ties by country code).';
COMMENT ON COLUMN top_countries.country_code IS 'ISO 3166-1 alpha-2 code (upper case).';
COMMENT ON COLUMN top_countries.country_alpha3 IS 'ISO 3166-1 alpha-3 code; NULL when countries has no row for the code.';
COMMENT ON COLUMN top_countries.country_name IS 'Country name from countries; NULL when countries has no row for the code.';
COMMENT ON COLUMN top_countries.share IS 'Decimal share 0-1 of the domain''s visits from the country (estimate).';

-- ---- sql/views/traffic_monthly.sql ----
-- traffic_monthly: one row per domain and month across every snapshot. When several snapshots
-- list the same month, the newest snapshot with a non-NULL value wins (the API revises its
-- estimates; a NULL is a missing value, not a revision). Growth compares calendar months: the
-- base of mom_change is the previous calendar month and of yoy_change the same month a year
-- earlier, each NULL when that month is absent, NULL or 0.
CREATE OR REPLACE VIEW traffic_monthly AS
WITH best AS (
    SELECT domain, month, visits, snapshot_month
    FROM traffic_history
    QUALIFY row_number() OVER (
        PARTITION BY domain, month
        ORDER BY visits IS NULL, snapshot_month DESC) = 1
)
SELECT
    b.domain,
    b.month,
    b.visits,
    b.snapshot_month AS source_snapshot,
    NOT coalesce(s.is_data_from_ga, false) AS is_estimate,
    prev.visits AS prev_month_visits,
    CASE WHEN prev.visits <> 0 THEN b.visits::DOUBLE / prev.visits - 1 END AS mom_change,
    year_ago.visits AS year_ago_visits,
    CASE WHEN year_ago.visits <> 0 THEN b.visits::DOUBLE / year_ago.visits - 1 END AS yoy_change
FROM best b
LEFT JOIN best prev
    ON prev.domain = b.domain AND prev.month = CAST(b.month - INTERVAL 1 MONTH AS DATE)
LEFT JOIN best year_ago
    ON year_ago.domain = b.domain AND year_ago.month = CAST(b.month - INTERVAL 12 MONTH AS DATE)
LEFT JOIN sites s
    ON s.snapshot_month = b.snapshot_month AND s.domain = b.domain;

COMMENT ON VIEW traffic_monthly IS 'Monthly visits per domain across all snapshots, one row per domain and month; the newest snapshot with a value wins. Growth is by calendar month.';
COMMENT ON COLUMN traffic_monthly.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN traffic_monthly.month IS 'Month (DATE, first day of the month).';
COMMENT ON COLUMN traffic_monthly.visits IS 'Visits in the month (count; estimate unless is_estimate is false).';
COMMENT ON COLUMN traffic_monthly.source_snapshot IS 'Snapshot (YYYY-MM) the value was taken from: the newest one listing the month with a non-NULL value.';
COMMENT ON COLUMN traffic_monthly.is_estimate IS 'true unless the source snapshot says the traffic comes from an analytics source (sites.is_data_from_ga).';
COMMENT ON COLUMN traffic_monthly.prev_month_visits IS 'Visits of the previous calendar month (count); NULL when that month is missing.';
COMMENT ON COLUMN traffic_monthly.mom_change IS 'Month-over-month change as a decimal (0.25 = +25%): visits / prev_month_visits - 1; NULL when the previous calendar month is missing or 0.';
COMMENT ON COLUMN traffic_monthly.year_ago_visits IS 'Visits of the same month one year earlier (count); NULL when that month is missing.';
COMMENT ON COLUMN traffic_monthly.yoy_change IS 'Year-over-year change as a decimal (0.25 = +25%): visits / year_ago_visits - 1; NULL when the month a year earlier is missing or 0.';
