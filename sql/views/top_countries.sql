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
