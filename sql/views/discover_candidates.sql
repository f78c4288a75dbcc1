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
