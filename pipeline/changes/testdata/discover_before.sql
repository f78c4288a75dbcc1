-- discover_candidates_in as it was before issue 44's rewrite (sql/views/discover_candidates.sql at
-- 6d4eff7), renamed discover_candidates_before: TestDiscoverSameAsBefore compares the two.
CREATE OR REPLACE MACRO discover_candidates_before(min_visits := NULL) AS TABLE
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
listed AS (
    SELECT ss.snapshot_month, ss.domain AS listed_by, ss.position,
           regexp_replace(rtrim(lower(trim(ss.similar_domain)), '.'), '^www\.', '') AS candidate,
           ss.title, ss.category_slug, ss.global_rank, ss.total_visits, ss.country_code,
           (0.5 + 0.5 * coalesce(ln(1 + w.total_visits) / nullif(ln(1 + w.largest_visits), 0), 0))
             * (0.5 + 0.5 / sqrt(greatest(ss.position, 1))) AS weight
    FROM similar_sites ss
    LEFT JOIN watched w ON w.snapshot_month = ss.snapshot_month AND w.domain = ss.domain
),
per_month AS (
    SELECT snapshot_month, candidate,
           count(DISTINCT listed_by) AS watched_by,
           sum(weight) AS reach,
           string_agg(DISTINCT listed_by, ', ' ORDER BY listed_by) AS listed_by,
           min(position) AS best_position,
           arg_min(title, position) AS title,
           arg_min(category_slug, position) AS category_slug,
           min(global_rank) AS global_rank,
           max(total_visits) AS total_visits,
           arg_min(country_code, position) AS country_code
    FROM listed
    GROUP BY snapshot_month, candidate
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
