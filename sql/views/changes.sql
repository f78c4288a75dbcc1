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
