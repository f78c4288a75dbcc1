-- The needs_attention_all macro as it was before its history step was rewritten
-- (sql/views/needs_attention.sql at fe6b78e), renamed needs_attention_all_before:
-- TestAttentionSameAsBefore compares the two.
CREATE OR REPLACE MACRO needs_attention_all_before(min_visits, threshold, only_month := NULL) AS TABLE
WITH p AS MATERIALIZED (
    SELECT c.snapshot_month, c.previous_month,
           CAST(c.snapshot_month || '-01' AS DATE) AS month_start,
           strftime(CAST(c.snapshot_month || '-01' AS DATE) - INTERVAL 25 MONTH, '%Y-%m') AS oldest_snapshot,
           CAST(coalesce(min_visits, 10000) AS DOUBLE) AS floor_visits,
           CAST(coalesce(threshold, 3) AS DOUBLE) AS z_min
    FROM complete_months c
    WHERE only_month IS NULL OR c.snapshot_month = CAST(only_month AS VARCHAR)
),
cur_sites AS MATERIALIZED (
    SELECT s.snapshot_month, s.domain, s.total_visits, s.global_rank, s.ai_total_visits
    FROM sites s JOIN p ON s.snapshot_month = p.snapshot_month
),
prev_sites AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.total_visits, s.global_rank, s.ai_total_visits
    FROM sites s JOIN p ON s.snapshot_month = p.previous_month
),
-- Monthly visits as traffic_monthly merges them, limited to snapshots up to the month: one
-- value per month, domain and calendar month, the newest snapshot holding a value wins.
hist AS MATERIALIZED (
    SELECT p.snapshot_month, h.domain, h.month,
           arg_max(h.visits, h.snapshot_month) FILTER (WHERE h.visits IS NOT NULL) AS visits
    FROM traffic_history h
    JOIN p ON h.snapshot_month <= p.snapshot_month AND h.snapshot_month >= p.oldest_snapshot
    SEMI JOIN cur_sites c ON c.snapshot_month = p.snapshot_month AND c.domain = h.domain
    WHERE h.month <= p.month_start AND h.month >= CAST(p.month_start - INTERVAL 25 MONTH AS DATE)
    GROUP BY p.snapshot_month, h.domain, h.month
),
-- Consecutive calendar months as a self-join (a hash join: no sort of every history, as a
-- window would need).
pairs AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.month, CAST(c.visits AS DOUBLE) AS visits, CAST(o.visits AS DOUBLE) AS prev_visits
    FROM hist c
    JOIN hist o ON o.snapshot_month = c.snapshot_month AND o.domain = c.domain AND o.month = CAST(c.month - INTERVAL 1 MONTH AS DATE)
),
steps AS (
    SELECT *, ln(visits / prev_visits) AS r FROM pairs WHERE visits > 0 AND prev_visits > 0
),
past AS MATERIALIZED (
    SELECT snapshot_month, domain, r
    FROM steps
    WHERE month < CAST(snapshot_month || '-01' AS DATE)
),
center AS (
    SELECT snapshot_month, domain, median(r) AS center, count(*) AS n FROM past GROUP BY ALL
),
swing AS (
    SELECT s.snapshot_month, s.domain, any_value(a.center) AS center, any_value(a.n) AS n,
           1.4826 * median(abs(s.r - a.center)) AS mad
    FROM past s JOIN center a USING (snapshot_month, domain)
    GROUP BY s.snapshot_month, s.domain
),
visit_z AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.visits, c.prev_visits, c.r, w.center, w.n,
           greatest(w.mad, 0.02) AS sd,
           (c.r - w.center) / greatest(w.mad, 0.02) AS z
    FROM steps c JOIN p USING (snapshot_month) LEFT JOIN swing w USING (snapshot_month, domain)
    WHERE c.month = p.month_start
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
    SELECT snapshot_month, domain, prev_visits FROM pairs
    JOIN p USING (snapshot_month)
    WHERE month = p.month_start AND visits = 0 AND prev_visits > 0
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
rank_med AS (
    SELECT snapshot_month, median(m) AS med FROM rank_moves GROUP BY ALL
),
rank_stats AS (
    SELECT r.snapshot_month, any_value(x.med) AS med, greatest(1.4826 * median(abs(r.m - x.med)), 0.05) AS sd
    FROM rank_moves r JOIN rank_med x USING (snapshot_month) GROUP BY r.snapshot_month
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
ai_med AS (
    SELECT snapshot_month, median(m) AS med FROM ai_moves GROUP BY ALL
),
ai_stats AS (
    SELECT a.snapshot_month, any_value(x.med) AS med, greatest(1.4826 * median(abs(a.m - x.med)), 0.10) AS sd
    FROM ai_moves a JOIN ai_med x USING (snapshot_month) GROUP BY a.snapshot_month
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
top_channel AS (
    SELECT p.snapshot_month, s.domain, arg_min(s.channel, struct_pack(s := -s.share, c := s.channel)) AS channel
    FROM sources_share s JOIN p ON s.snapshot_month = p.previous_month
    WHERE s.share IS NOT NULL
    GROUP BY p.snapshot_month, s.domain
),
channel_moves AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.channel, o.share AS prev_share, s.share, s.share - o.share AS m
    FROM sources_share s
    JOIN p ON s.snapshot_month = p.snapshot_month
    JOIN sources_share o ON o.snapshot_month = p.previous_month AND o.domain = s.domain AND o.channel = s.channel
    WHERE s.share IS NOT NULL AND o.share IS NOT NULL
),
channel_med AS (
    SELECT snapshot_month, channel, median(m) AS med FROM channel_moves GROUP BY ALL
),
channel_stats AS (
    SELECT c.snapshot_month, c.channel, any_value(x.med) AS med, greatest(1.4826 * median(abs(c.m - x.med)), 0.02) AS sd
    FROM channel_moves c JOIN channel_med x USING (snapshot_month, channel)
    GROUP BY c.snapshot_month, c.channel
),
channel_rows AS (
    SELECT c.snapshot_month, c.domain, 'top_channel_fell' AS kind, 'channel_share' AS metric, c.channel,
           100 * c.share AS value, 100 * c.prev_share AS previous_value,
           CAST(NULL AS DOUBLE) AS change_pct, 100 * c.m AS change_points,
           (c.m - s.med) / s.sd AS z, -(c.m - s.med) / s.sd AS score,
           CASE WHEN -(c.m - s.med) / s.sd >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
           CASE c.channel
               WHEN 'organic_search' THEN 'Organic search' WHEN 'paid_search' THEN 'Paid search'
               WHEN 'organic_social' THEN 'Organic social' WHEN 'paid_social' THEN 'Paid social'
               WHEN 'generative_ai' THEN 'Generative AI' WHEN 'display_ads' THEN 'Display ads'
               ELSE upper(c.channel[1]) || c.channel[2:] END
           || ', its top channel, fell from ' || printf('%.1f', 100 * c.prev_share) || '% to '
           || printf('%.1f', 100 * c.share) || '% of its visits'
           || ' — the watchlist''s share of it moved ±' || printf('%.1f', 100 * s.sd) || ' points this month' AS reason,
           0 AS tier, coalesce(pr.visits, pr.prev_visits) AS size
    FROM channel_moves c
    JOIN top_channel t USING (snapshot_month, domain, channel)
    JOIN channel_stats s USING (snapshot_month, channel)
    JOIN pair pr USING (snapshot_month, domain)
    JOIN p USING (snapshot_month)
    WHERE (c.m - s.med) / s.sd <= -p.z_min AND c.m <= -0.05
      AND coalesce(pr.visits, pr.prev_visits) >= p.floor_visits
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
    r.rank,
    CAST(dense_rank() OVER (PARTITION BY r.snapshot_month ORDER BY r.domain_first) AS BIGINT) AS domain_rank,
    p.floor_visits AS min_visits,
    p.z_min AS threshold
FROM firsts r JOIN p USING (snapshot_month);
