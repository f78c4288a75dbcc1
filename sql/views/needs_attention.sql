-- needs_attention: the domains of a month that an analyst should look at first, one row per
-- domain and reason, ranked. Defined once, as the table macro needs_attention_in(); the view
-- needs_attention is that macro with its defaults (the latest complete month, a size floor of
-- 10,000 visits, a threshold of 3). `sitewatch changes`, the report, the webhook digest and
-- /metrics call the macro with the config's attention.min_visits and attention.threshold, so
-- every surface and an analyst's SQL agree:
--
--   SELECT * FROM needs_attention_in(for_month := '2026-10', min_visits := 50000, threshold := 4);
--
-- A domain is listed for:
--   visits_fell / visits_rose  its month-over-month log change in visits, measured against its
--       own earlier months: z = (ln(v_m / v_m-1) - median of its earlier monthly log changes)
--       / max(1.4826 × MAD of those changes, 0.02), over the up to 24 monthly changes before
--       the month that the warehouse holds (traffic_history across snapshots, the newest
--       snapshot with a value wins, none newer than the month). Listed when |z| >= threshold,
--       at least 6 earlier changes are known, and the month or the month before had at least
--       min_visits visits. The 0.02 floor (about ±2 %) keeps a giant whose months barely move
--       from being listed for an ordinary percent.
--   steep_fall  one of the 3 largest falls in visits (at least 2 %) among the domains at or above
--       the month's median visits (and the floor), when not already listed as visits_fell:
--       a big domain's large fall is named even when its own months are volatile.
--   rank_lost, ai_visits_fell, top_channel_fell  the global rank, the AI-referred visits, or
--       the share of the channel that brought the domain most visits in the previous
--       complete month, compared with the previous complete month. The warehouse holds only
--       one value a snapshot for these, so "unusual" is measured against the other
--       domains' moves in the same month: z = (move - median move) / max(1.4826 × MAD of
--       moves, floor), with move = ln(new rank / old rank) (floor 0.05), ln(new AI visits /
--       old) (floor 0.10; an AI count that fell to 0 or NULL counts as ln(1/old)), or the
--       change in share (floor 0.02 share points, and at least 5 points lost). Listed when
--       the domain lost (z >= threshold for a rank, z <= -threshold for the others) and had
--       at least min_visits visits (AI: and at least min_visits / 100 AI-referred visits).
--   data_missing  in the previous complete month's data but not in this month's (rejected by
--       the API, a fetch error, or no longer fetched), or loaded without a visits figure for
--       the month when the previous complete month had one.
--   quality_failed  an error or warn finding of quality_checks about the domain in the month.
--   rising_candidate  a domain not on the month's watchlist that the watchlist's similar sites
--       point at more than before (discover_candidates: new this month, more watched domains
--       list it, or its rank improved), among the 10 it points at most, with at least
--       min_visits visits: at most the 3 best such candidates (what `sitewatch discover` lists).
--
-- score orders the list: |z| for the measured reasons; 2 × threshold for missing data and a
-- quality error, the threshold for a quality warning and a rising candidate. rank 1 is the first row (score, then
-- the larger fall, then the larger domain, then name); domain_rank numbers the domains by their first row, so a
-- surface that groups the reasons of a domain keeps the same order.
--
-- requires: discover_candidates.sql

CREATE OR REPLACE MACRO needs_attention_in(for_month := NULL, min_visits := NULL, threshold := NULL) AS TABLE
WITH p0 AS MATERIALIZED (
    SELECT coalesce(CAST(for_month AS VARCHAR), (SELECT max(snapshot_month) FROM complete_months)) AS snapshot_month,
           CAST(coalesce(min_visits, 10000) AS DOUBLE) AS floor_visits,
           CAST(coalesce(threshold, 3) AS DOUBLE) AS z_min
),
p AS MATERIALIZED (
    SELECT p0.*,
           CAST(p0.snapshot_month || '-01' AS DATE) AS month_start,
           (SELECT max(c.snapshot_month) FROM complete_months c WHERE c.snapshot_month < p0.snapshot_month) AS previous_month
    FROM p0
    WHERE p0.snapshot_month IS NOT NULL
),
cur_sites AS MATERIALIZED (
    SELECT s.* FROM sites s, p WHERE s.snapshot_month = p.snapshot_month
),
prev_sites AS MATERIALIZED (
    SELECT s.* FROM sites s, p WHERE s.snapshot_month = p.previous_month
),
-- Monthly visits as traffic_monthly merges them, limited to snapshots up to the month.
hist AS MATERIALIZED (
    SELECT h.domain, h.month, h.visits
    FROM traffic_history h, p
    WHERE h.snapshot_month <= p.snapshot_month AND h.month <= p.month_start
      AND h.month >= CAST(p.month_start - INTERVAL 25 MONTH AS DATE)
      AND h.domain IN (SELECT domain FROM cur_sites)
    QUALIFY row_number() OVER (PARTITION BY h.domain, h.month ORDER BY h.visits IS NULL, h.snapshot_month DESC) = 1
),
steps AS MATERIALIZED (
    SELECT domain, month, visits, prev_visits, ln(visits / prev_visits) AS r
    FROM (
        SELECT domain, month, CAST(visits AS DOUBLE) AS visits,
               CAST(lag(visits) OVER w AS DOUBLE) AS prev_visits, lag(month) OVER w AS prev_month
        FROM hist
        WINDOW w AS (PARTITION BY domain ORDER BY month)
    )
    WHERE prev_month = CAST(month - INTERVAL 1 MONTH AS DATE) AND visits > 0 AND prev_visits > 0
),
past AS (
    SELECT s.domain, median(s.r) AS center, count(*) AS n
    FROM steps s, p WHERE s.month < p.month_start
    GROUP BY s.domain
),
swing AS (
    SELECT s.domain, a.center, a.n, 1.4826 * median(abs(s.r - a.center)) AS mad
    FROM steps s JOIN past a USING (domain), p
    WHERE s.month < p.month_start
    GROUP BY s.domain, a.center, a.n
),
visit_z AS MATERIALIZED (
    SELECT c.domain, c.visits, c.prev_visits, c.r, w.center, w.n,
           greatest(w.mad, 0.02) AS sd,
           (c.r - w.center) / greatest(w.mad, 0.02) AS z
    FROM steps c LEFT JOIN swing w USING (domain), p
    WHERE c.month = p.month_start
),
visit_words AS (
    SELECT v.*,
           CASE
               WHEN v.r < 0 THEN 'fell ' || printf('%.1f', 100 * (1 - exp(v.r))) || ' %'
               WHEN v.z < 0 THEN 'rose only ' || printf('%.1f', 100 * (exp(v.r) - 1)) || ' %'
               ELSE 'rose ' || printf('%.1f', 100 * (exp(v.r) - 1)) || ' %'
           END
           || ' (' || printf('%,d', CAST(round(v.prev_visits) AS BIGINT)) || ' → ' || printf('%,d', CAST(round(v.visits) AS BIGINT)) || ' visits)' AS moved,
           CASE WHEN v.n >= 6 THEN ' — its months usually move '
                || CASE WHEN abs(v.center) >= v.sd / 2 THEN printf('%+.1f', 100 * (exp(v.center) - 1)) || ' % ' ELSE '' END
                || '±' || printf('%.1f', 100 * (exp(v.sd) - 1)) || ' %'
           ELSE '' END AS usual
    FROM visit_z v
),
visit_rows AS MATERIALIZED (
    SELECT v.domain,
           CASE WHEN v.z < 0 THEN 'visits_fell' ELSE 'visits_rose' END AS reason_kind,
           v.moved || v.usual AS reason,
           abs(v.z) AS score, v.z,
           v.visits, v.prev_visits AS previous_visits,
           v.visits / v.prev_visits - 1 AS change
    FROM visit_words v, p
    WHERE abs(v.z) >= p.z_min AND v.n >= 6 AND greatest(v.visits, v.prev_visits) >= p.floor_visits
),
-- The steepest falls of the larger half: the 3 largest falls (at least 2 %) among the domains
-- at or above the month's median visits, each listed even when its own months make the fall
-- ordinary, so a big domain's large fall is never left out.
steep AS (
    SELECT v.*, row_number() OVER (ORDER BY v.r, v.domain) AS fall_rank
    FROM visit_words v, p
    WHERE v.visits >= (SELECT median(visits) FROM visit_z) AND v.visits >= p.floor_visits AND v.r <= ln(0.98)
),
steep_rows AS (
    SELECT s.domain, 'steep_fall' AS reason_kind,
           s.moved || ', ' || CASE s.fall_rank WHEN 1 THEN 'the steepest fall' ELSE 'the ' || CASE s.fall_rank WHEN 2 THEN '2nd' ELSE '3rd' END || ' steepest fall' END
           || ' among the larger half of the watchlist' || s.usual AS reason,
           greatest(coalesce(abs(s.z), 0), p.z_min) AS score, s.z,
           s.visits, s.prev_visits AS previous_visits,
           s.visits / s.prev_visits - 1 AS change
    FROM steep s, p
    WHERE s.fall_rank <= 3 AND s.domain NOT IN (SELECT domain FROM visit_rows)
),
pair AS MATERIALIZED (
    SELECT c.domain, c.total_visits AS visits, o.total_visits AS prev_visits,
           c.global_rank, o.global_rank AS prev_rank,
           c.ai_total_visits AS ai, o.ai_total_visits AS prev_ai
    FROM cur_sites c JOIN prev_sites o USING (domain)
),
rank_moves AS MATERIALIZED (
    SELECT *, ln(global_rank::DOUBLE / prev_rank) AS m
    FROM pair WHERE global_rank > 0 AND prev_rank > 0
),
rank_z AS (
    SELECT r.*, (r.m - s.med) / greatest(s.mad, 0.05) AS z, greatest(s.mad, 0.05) AS sd
    FROM rank_moves r,
         (SELECT median(m) AS med, 1.4826 * median(abs(m - (SELECT median(m) FROM rank_moves))) AS mad FROM rank_moves) s
),
rank_rows AS (
    SELECT r.domain, 'rank_lost' AS reason_kind,
           'lost ' || printf('%,d', r.global_rank - r.prev_rank) || ' places in the global rank (#'
           || printf('%,d', r.prev_rank) || ' → #' || printf('%,d', r.global_rank) || ')'
           || ' — the watchlist''s ranks moved ±' || printf('%.1f', 100 * (exp(r.sd) - 1)) || ' % this month' AS reason,
           r.z AS score, r.z,
           r.visits, r.prev_visits AS previous_visits,
           r.global_rank::DOUBLE / r.prev_rank - 1 AS change
    FROM rank_z r, p
    WHERE r.z >= p.z_min AND r.global_rank > r.prev_rank AND coalesce(r.visits, r.prev_visits) >= p.floor_visits
),
ai_moves AS MATERIALIZED (
    SELECT pr.*, ln(greatest(coalesce(pr.ai, 0), 1)::DOUBLE / pr.prev_ai) AS m
    FROM pair pr, p WHERE pr.prev_ai > 0
),
ai_z AS (
    SELECT a.*, (a.m - s.med) / greatest(s.mad, 0.10) AS z, greatest(s.mad, 0.10) AS sd
    FROM ai_moves a,
         (SELECT median(m) AS med, 1.4826 * median(abs(m - (SELECT median(m) FROM ai_moves))) AS mad FROM ai_moves) s
),
ai_rows AS (
    SELECT a.domain, 'ai_visits_fell' AS reason_kind,
           'AI-referred visits fell ' || printf('%.1f', 100 * (1 - coalesce(a.ai, 0)::DOUBLE / a.prev_ai)) || ' % ('
           || printf('%,d', a.prev_ai) || ' → ' || printf('%,d', coalesce(a.ai, 0)) || ')'
           || ' — the watchlist''s moved ±' || printf('%.1f', 100 * (exp(a.sd) - 1)) || ' % this month' AS reason,
           -a.z AS score, a.z,
           a.visits, a.prev_visits AS previous_visits,
           coalesce(a.ai, 0)::DOUBLE / a.prev_ai - 1 AS change
    FROM ai_z a, p
    WHERE a.z <= -p.z_min AND coalesce(a.visits, a.prev_visits) >= p.floor_visits AND a.prev_ai >= p.floor_visits / 100
),
top_channel AS (
    SELECT s.domain, s.channel, s.share AS prev_share
    FROM sources_share s, p
    WHERE s.snapshot_month = p.previous_month AND s.share IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY s.domain ORDER BY s.share DESC, s.channel) = 1
),
channel_moves AS MATERIALIZED (
    SELECT s.domain, s.channel, o.share AS prev_share, s.share, s.share - o.share AS m
    FROM sources_share s
    JOIN p ON s.snapshot_month = p.snapshot_month
    JOIN sources_share o ON o.snapshot_month = p.previous_month AND o.domain = s.domain AND o.channel = s.channel
    WHERE s.share IS NOT NULL AND o.share IS NOT NULL
),
channel_stats AS (
    SELECT c.channel, median(c.m) AS med,
           1.4826 * median(abs(c.m - x.med)) AS mad
    FROM channel_moves c JOIN (SELECT channel, median(m) AS med FROM channel_moves GROUP BY channel) x USING (channel)
    GROUP BY c.channel
),
channel_rows AS (
    SELECT c.domain, 'top_channel_fell' AS reason_kind,
           CASE c.channel
               WHEN 'organic_search' THEN 'Organic search' WHEN 'paid_search' THEN 'Paid search'
               WHEN 'organic_social' THEN 'Organic social' WHEN 'paid_social' THEN 'Paid social'
               WHEN 'generative_ai' THEN 'Generative AI' WHEN 'display_ads' THEN 'Display ads'
               ELSE upper(c.channel[1]) || c.channel[2:] END
           || ', its top channel, fell from ' || printf('%.1f', 100 * c.prev_share) || ' % to '
           || printf('%.1f', 100 * c.share) || ' % of its visits'
           || ' — the watchlist''s share of it moved ±' || printf('%.1f', 100 * greatest(s.mad, 0.02)) || ' points this month' AS reason,
           -(c.m - s.med) / greatest(s.mad, 0.02) AS score,
           (c.m - s.med) / greatest(s.mad, 0.02) AS z,
           pr.visits, pr.prev_visits AS previous_visits,
           c.m AS change
    FROM channel_moves c
    JOIN top_channel t ON t.domain = c.domain AND t.channel = c.channel
    JOIN channel_stats s ON s.channel = c.channel
    JOIN pair pr ON pr.domain = c.domain, p
    WHERE (c.m - s.med) / greatest(s.mad, 0.02) <= -p.z_min AND c.m <= -0.05
      AND coalesce(pr.visits, pr.prev_visits) >= p.floor_visits
),
last_error AS (
    SELECT e.domain, arg_max(e.http_status, e.occurred_at) AS http_status,
           arg_max(e.endpoint, e.occurred_at) AS endpoint, arg_max(e.code, e.occurred_at) AS code
    FROM fetch_errors e, p WHERE e.snapshot_month = p.snapshot_month
    GROUP BY e.domain
),
missing_rows AS (
    SELECT o.domain, 'data_missing' AS reason_kind,
           'no data this month: '
           || CASE WHEN e.http_status = 400 THEN 'the API rejected the domain (400' || coalesce(', ' || e.code, '') || ')'
                   WHEN e.domain IS NOT NULL THEN 'fetching its ' || e.endpoint || ' failed'
                        || coalesce(' (HTTP ' || e.http_status || coalesce(', ' || e.code, '') || ')', '')
                   ELSE 'not loaded (no longer on the watchlist, or not fetched)' END
           || ' — it had ' || coalesce(printf('%,d', CAST(round(o.total_visits) AS BIGINT)) || ' visits', 'data') || ' in ' || p.previous_month AS reason,
           2 * p.z_min AS score, CAST(NULL AS DOUBLE) AS z,
           CAST(NULL AS DOUBLE) AS visits, o.total_visits AS previous_visits, CAST(NULL AS DOUBLE) AS change
    FROM prev_sites o
    CROSS JOIN p
    LEFT JOIN last_error e ON e.domain = o.domain
    WHERE o.domain NOT IN (SELECT domain FROM cur_sites)
    UNION ALL
    SELECT c.domain, 'data_missing',
           'no visits figure this month — it had ' || printf('%,d', CAST(round(o.total_visits) AS BIGINT)) || ' visits in ' || p.previous_month,
           2 * p.z_min, NULL, NULL, o.total_visits, NULL
    FROM cur_sites c JOIN prev_sites o USING (domain), p
    WHERE c.total_visits IS NULL AND o.total_visits IS NOT NULL
),
quality_rows AS (
    SELECT q.domain, 'quality_failed' AS reason_kind,
           CASE WHEN count(*) = 1 THEN 'failed the quality check ' ELSE 'failed ' || count(*) || ' quality checks: ' END
           || string_agg(q."check" || ' on ' || q.table_name || ' (' || q.severity || ': ' || q.observed || ', expected ' || q.expected || ')', '; '
                         ORDER BY q.severity = 'error' DESC, q."check", q.table_name) AS reason,
           CASE WHEN bool_or(q.severity = 'error') THEN 2 * any_value(p.z_min) ELSE any_value(p.z_min) END AS score,
           CAST(NULL AS DOUBLE) AS z,
           any_value(c.total_visits) AS visits, any_value(o.total_visits) AS previous_visits, CAST(NULL AS DOUBLE) AS change
    FROM quality_checks q
    JOIN p ON q.snapshot_month = p.snapshot_month
    LEFT JOIN cur_sites c ON c.domain = q.domain
    LEFT JOIN prev_sites o ON o.domain = q.domain
    WHERE q.domain IS NOT NULL AND q.severity IN ('error', 'warn')
    GROUP BY q.domain
),
candidate_rows AS (
    SELECT d.candidate AS domain, 'rising_candidate' AS reason_kind,
           'not on the watchlist this month, worth tracking: ' || d.reason
           || ' (`sitewatch discover --add`)' AS reason,
           p.z_min AS score, CAST(NULL AS DOUBLE) AS z,
           CAST(d.total_visits AS DOUBLE) AS visits, CAST(NULL AS DOUBLE) AS previous_visits, CAST(NULL AS DOUBLE) AS change
    FROM discover_candidates d, p
    WHERE d.snapshot_month = p.snapshot_month AND d.discover_rank <= 10 AND (d.is_new OR d.is_rising)
      AND d.total_visits >= p.floor_visits
    QUALIFY row_number() OVER (ORDER BY d.discover_rank) <= 3
),
all_rows AS MATERIALIZED (
    SELECT * FROM visit_rows
    UNION ALL SELECT * FROM steep_rows
    UNION ALL SELECT * FROM rank_rows
    UNION ALL SELECT * FROM ai_rows
    UNION ALL SELECT * FROM channel_rows
    UNION ALL SELECT * FROM missing_rows
    UNION ALL SELECT * FROM quality_rows
    UNION ALL SELECT * FROM candidate_rows
),
ranked AS (
    SELECT a.*,
           row_number() OVER (ORDER BY a.score DESC, a.change ASC NULLS LAST, coalesce(a.visits, a.previous_visits) DESC NULLS LAST, a.domain, a.reason_kind) AS rank
    FROM all_rows a
),
firsts AS (
    SELECT *, min(rank) OVER (PARTITION BY domain) AS domain_first FROM ranked
)
SELECT
    p.snapshot_month,
    p.previous_month,
    r.domain,
    r.reason_kind,
    r.reason,
    CASE WHEN r.score >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
    r.score,
    r.z,
    r.rank,
    CAST(dense_rank() OVER (ORDER BY r.domain_first) AS BIGINT) AS domain_rank,
    r.visits,
    r.previous_visits,
    r.change,
    p.floor_visits AS min_visits,
    p.z_min AS threshold
FROM firsts r, p
ORDER BY r.rank;

CREATE OR REPLACE VIEW needs_attention AS SELECT * FROM needs_attention_in();

COMMENT ON VIEW needs_attention IS 'The latest complete month''s domains whose move is unusual for them (visits against their own earlier months; rank, AI-referred visits and top channel against the watchlist''s moves), whose data went missing, or that failed a quality check, and the rising candidates not on the watchlist (at most 3): one row per domain and reason, with the reason in words, ranked (rank 1 first). Defaults: size floor 10,000 visits, threshold 3; the table macro needs_attention_in(for_month, min_visits, threshold) takes other values (sitewatch passes attention.min_visits and attention.threshold from the config).';
COMMENT ON COLUMN needs_attention.snapshot_month IS 'Snapshot (YYYY-MM) the list is for: the latest complete month.';
COMMENT ON COLUMN needs_attention.previous_month IS 'The complete snapshot before it (YYYY-MM) that rank, AI, channel and missing-data reasons compare with; NULL when there is none.';
COMMENT ON COLUMN needs_attention.domain IS 'Normalized watchlist domain (for rising_candidate: the candidate, not on the watchlist).';
COMMENT ON COLUMN needs_attention.reason_kind IS 'visits_fell, visits_rose (unusual for the domain''s own months), steep_fall (one of the 3 steepest falls of at least 2 % among the domains at or above the median size), rank_lost, ai_visits_fell, top_channel_fell (unusual against the watchlist this month), data_missing, quality_failed, or rising_candidate (a domain not on the watchlist that its similar sites point at more: discover_candidates).';
COMMENT ON COLUMN needs_attention.reason IS 'Why the domain is listed, in words, e.g. "fell 18.0 % (1,000,000 → 820,000 visits) — its months usually move ±3.0 %".';
COMMENT ON COLUMN needs_attention.severity IS 'high when score >= 2 × threshold (and always for missing data and quality errors), else medium.';
COMMENT ON COLUMN needs_attention.score IS 'What the list is ordered by (larger first): |z| for the measured reasons (at least the threshold for steep_fall), 2 × threshold for missing data and quality errors, the threshold for quality warnings and rising candidates.';
COMMENT ON COLUMN needs_attention.z IS 'The move in units of its usual swing: (move - median move) / max(1.4826 × MAD, floor); negative = down (a rank''s z is positive when it worsened). NULL for data_missing and quality_failed.';
COMMENT ON COLUMN needs_attention.rank IS 'Position in the list, 1 = first: by score, then the larger fall (change), then the larger domain (visits, else previous visits), then domain and reason_kind.';
COMMENT ON COLUMN needs_attention.domain_rank IS 'Position of the domain, 1 = first: the domains ordered by their best-ranked row, so a surface that groups a domain''s reasons keeps the list''s order.';
COMMENT ON COLUMN needs_attention.visits IS 'The domain''s visits in the month (count, estimate): the traffic history''s figure for visits_* rows, sites.total_visits otherwise; NULL when missing.';
COMMENT ON COLUMN needs_attention.previous_visits IS 'Visits of the month before (visits_* rows: the previous calendar month; other rows: sites.total_visits in previous_month), count.';
COMMENT ON COLUMN needs_attention.change IS 'The move as a number: visits / previous visits - 1 for visits_* (decimal, -0.18 = -18 %); new rank / old rank - 1 for rank_lost; AI visits new / old - 1 for ai_visits_fell; the change in share (decimal share points) for top_channel_fell; NULL otherwise.';
COMMENT ON COLUMN needs_attention.min_visits IS 'The size floor the list was computed with (visits in the month or the month before).';
COMMENT ON COLUMN needs_attention.threshold IS 'The |z| a move must reach to be listed.';
