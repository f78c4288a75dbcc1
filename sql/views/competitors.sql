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
