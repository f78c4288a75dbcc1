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
