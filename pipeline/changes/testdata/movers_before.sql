-- The changes_movers_in macro as it was before changes_movers_scored (sql/views/changes.sql at
-- fe6b78e), renamed changes_movers_before: TestMoversSameAsBefore compares the two.
CREATE OR REPLACE MACRO changes_movers_before(against := NULL) AS TABLE
WITH pairs AS (
    SELECT snapshot_month, previous_month FROM change_pairs(against)
),
metrics AS (
    SELECT snapshot_month, domain, 'visits' AS metric, CAST(NULL AS VARCHAR) AS channel, total_visits AS value FROM sites
    UNION ALL
    SELECT snapshot_month, domain, 'global_rank', NULL, CAST(global_rank AS DOUBLE) FROM sites
    UNION ALL
    SELECT snapshot_month, domain, 'ai_visits', NULL, CAST(ai_total_visits AS DOUBLE) FROM sites
    UNION ALL
    SELECT snapshot_month, domain, 'ai_traffic_share', NULL, ai_global_traffic_share FROM sites
    UNION ALL
    SELECT snapshot_month, domain, 'channel_share', channel, share FROM sources_share
),
joined AS (
    SELECT p.snapshot_month, p.previous_month, c.domain, c.metric, c.channel,
           o.value AS previous_value, c.value AS current_value
    FROM pairs p
    JOIN metrics c ON c.snapshot_month = p.snapshot_month
    JOIN metrics o ON o.snapshot_month = p.previous_month AND o.domain = c.domain
                  AND o.metric = c.metric AND o.channel IS NOT DISTINCT FROM c.channel
    WHERE c.value IS NOT NULL AND o.value IS NOT NULL
),
sizes AS (
    SELECT snapshot_month, domain, total_visits AS visits FROM sites
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
    importance,
    row_number() OVER (
        PARTITION BY snapshot_month, metric
        ORDER BY importance DESC NULLS LAST, abs(change) DESC, domain, channel) AS mover_rank
FROM scored;
