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
