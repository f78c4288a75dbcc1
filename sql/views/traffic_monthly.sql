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
