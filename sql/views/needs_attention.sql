-- needs_attention: for every complete month, the watchlist domains whose move is unusual for
-- them, one row per domain and reason, ranked within the month. Only rows that pass their test
-- appear: a quiet month has none (every surface then says "nothing unusual" in one line).
-- Defined once, as the table macro needs_attention_in(); the view needs_attention is that macro
-- with its defaults (every complete month, a size floor of 10,000 visits, a threshold of 3).
-- `sitewatch changes`, `show`, the report, the webhook and /metrics call the macro with the
-- config's attention.min_visits and attention.threshold, so every surface and an analyst's SQL
-- agree:
--
--   SELECT * FROM needs_attention_in(for_month := '2026-10', min_visits := 50000, threshold := 4);
--   SELECT * FROM needs_attention WHERE snapshot_month = '2026-10';
--
-- The month is a filter on the months the macro computes (never a value inside its steps), so
-- the macro may be called per month, through LATERAL too:
--
--   SELECT n.* FROM complete_months m, LATERAL needs_attention_in(for_month := m.snapshot_month) n;
--
-- A domain is listed (kind, metric) for:
--   vanished (visits)  its visits fell to 0 from at least min_visits the month before (traffic
--       history, or sites.total_visits against the previous complete month): always severity
--       high and first in the list; z is NULL (a fall to nothing has no ratio to measure).
--   visits_fell / visits_rose (visits)  its month-over-month log change in visits, measured
--       against its own earlier months: z = (ln(v_m / v_m-1) - median of its earlier monthly log
--       changes) / max(1.4826 × MAD of those changes, 0.02), over the up to 24 monthly changes
--       before the month that the warehouse holds (traffic_history across snapshots up to the
--       month, the newest snapshot with a value wins). Listed when |z| >= threshold, at least 6
--       earlier changes are known, and the month or the month before had at least min_visits
--       visits. The 0.02 floor (about ±2 %) keeps a giant whose months barely move from being
--       listed for an ordinary percent.
--   rank_lost (global_rank), ai_visits_fell (ai_visits), top_channel_fell (channel_share)
--       the global rank, the AI-referred visits, or the share of the channel that brought the
--       domain most visits in the previous complete month, compared with the previous complete
--       month. The warehouse holds one value a snapshot for these, so "unusual" is measured
--       against the other domains' moves in the same month: z = (move - median move) /
--       max(1.4826 × MAD of moves, floor), with move = ln(new rank / old rank) (floor 0.05),
--       ln(new AI visits / old) (floor 0.10; an AI count that fell to 0 or NULL counts as
--       ln(1/old)), or the change in share (floor 2 share points, and at least 5 points lost).
--       Listed when the domain lost (z >= threshold for a rank, z <= -threshold for the others)
--       and had at least min_visits visits (AI: and at least min_visits / 100 AI-referred visits).
--   data_missing (visits)  in the previous complete month's data but not in this month's
--       (rejected by the API, a fetch error, or no longer fetched), or loaded without a visits
--       figure for the month when the previous complete month had one.
--   quality_failed (no metric)  an error or warn finding of quality_checks about the domain.
--
-- Severity follows |z| in bands of the threshold: high at 2 × threshold or more, medium from the
-- threshold; vanished, missing data and quality errors are high, quality warnings medium.
-- Candidates not on the watchlist are never rows here (discover_candidates, "worth tracking"),
-- and the largest falls of the month are their own ranking (largest_falls_in, sql/views/changes.sql).
--
-- score orders the list: |z| for the measured reasons; 2 × threshold for missing data and a
-- quality error, the threshold for a quality warning. rank 1 is the first row of its month
-- (vanished first, then score, then the larger fall, then the larger domain, then name);
-- domain_rank numbers the month's domains by their first row, so a surface that groups the
-- reasons of a domain keeps the same order.
--
-- requires: _format.sql

-- The visits reasons' per-domain half (each domain's merged history, its consecutive-month
-- steps and their median and MAD) is the list's cost: 2.4 million history rows at 100,000
-- domains. It depends on the history alone, so it is computed once per complete month into
-- attention_visit_steps (sql/migrations/0011_attention_visit_steps.sql) and read from there
-- while the history it came from is unchanged: attention_visit_sources keeps, per month, each
-- read snapshot's row count and an order-free checksum of its rows, and a month whose sources
-- differ from the history now (a rerun, a rebuild, a restore, an analyst's UPDATE) is computed
-- from the history at the read, as if no cache existed. The tables are repeated here with IF NOT
-- EXISTS for the BI file's DuckDB, which has no migrations: there they stay empty and every month
-- is computed. A writer's open, the end of a run and `rebuild` store the months that lack rows
-- (warehouse.RefreshAttention).
CREATE TABLE IF NOT EXISTS attention_visit_steps (
    snapshot_month VARCHAR NOT NULL, domain VARCHAR NOT NULL,
    visits DOUBLE, prev_visits DOUBLE, center DOUBLE, n BIGINT, mad DOUBLE
);
CREATE TABLE IF NOT EXISTS attention_visit_sources (
    snapshot_month VARCHAR NOT NULL, source_month VARCHAR NOT NULL, row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

-- attention_history_sources(only_month): per complete month (or only_month) and each of the 26
-- snapshots its history reads (the month and the 25 before it), that snapshot's traffic_history
-- rows now: count and checksum (0 and 0 when it has none).
CREATE OR REPLACE MACRO attention_history_sources(only_month := NULL) AS TABLE
WITH snaps AS (
    SELECT c.snapshot_month, strftime(CAST(c.snapshot_month || '-01' AS DATE) - to_months(CAST(k AS INTEGER)), '%Y-%m') AS source_month
    FROM complete_months c, range(26) r(k)
    WHERE only_month IS NULL OR c.snapshot_month = CAST(only_month AS VARCHAR)
),
now AS (
    SELECT h.snapshot_month AS source_month, count(*) AS row_count, rows_checksum(hash(h.domain, h.month, h.visits)) AS checksum
    FROM traffic_history h
    GROUP BY h.snapshot_month
)
SELECT s.snapshot_month, s.source_month, coalesce(n.row_count, 0) AS row_count, CAST(coalesce(n.checksum, 0) AS UBIGINT) AS checksum
FROM snaps s LEFT JOIN now n USING (source_month);

-- attention_visit_months(only_month): the complete months (or only_month) and whether
-- attention_visit_steps holds them computed from the history as it is now.
CREATE OR REPLACE MACRO attention_visit_months(only_month := NULL) AS TABLE
SELECT s.snapshot_month, count(c.snapshot_month) = 26 AS cached
FROM attention_history_sources(only_month := only_month) s
LEFT JOIN attention_visit_sources c
       ON c.snapshot_month = s.snapshot_month AND c.source_month = s.source_month
      AND c.row_count = s.row_count AND c.checksum = s.checksum
GROUP BY s.snapshot_month;

-- attention_visit_steps_of(only_month, only_domain): per complete month (or only_month) and
-- domain (or only_domain) with a value for the month and the month before: both values and the
-- median, count and 1.4826 × MAD of the domain's earlier monthly log changes. Read from
-- attention_visit_steps for a month it holds as of the history now, else computed here:
--
-- Monthly visits as traffic_monthly merges them, limited to snapshots up to the month: one
-- value per month, domain and calendar month, the newest snapshot holding a value wins, over
-- the month and the 25 before it. The history is hash-joined on the month's 26 snapshot keys
-- instead of range-joined with the months (a sort of every history row). Consecutive calendar
-- months are a self-join (a hash join: no sort of every history, as a window would need; a
-- window measured twice as slow at 100,000 domains).
CREATE OR REPLACE MACRO attention_visit_steps_of(only_month := NULL, only_domain := NULL) AS TABLE
WITH m AS MATERIALIZED (
    SELECT snapshot_month, cached, CAST(snapshot_month || '-01' AS DATE) AS month_start
    FROM attention_visit_months(only_month := only_month)
),
hist_snaps AS MATERIALIZED (
    SELECT m.snapshot_month, m.month_start, CAST(m.month_start - INTERVAL 25 MONTH AS DATE) AS oldest_month,
           strftime(m.month_start - to_months(CAST(k AS INTEGER)), '%Y-%m') AS hist_snapshot
    FROM m, range(26) r(k)
    WHERE NOT m.cached
),
hist AS MATERIALIZED (
    SELECT s.snapshot_month, h.domain, h.month,
           arg_max(h.visits, h.snapshot_month) FILTER (WHERE h.visits IS NOT NULL) AS visits
    FROM traffic_history h
    JOIN hist_snaps s ON h.snapshot_month = s.hist_snapshot
    WHERE h.month <= s.month_start AND h.month >= s.oldest_month
      AND (only_domain IS NULL OR h.domain = CAST(only_domain AS VARCHAR))
    GROUP BY s.snapshot_month, h.domain, h.month
),
pairs AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.month, CAST(c.visits AS DOUBLE) AS visits, CAST(o.visits AS DOUBLE) AS prev_visits
    FROM hist c
    JOIN hist o ON o.snapshot_month = c.snapshot_month AND o.domain = c.domain AND o.month = CAST(c.month - INTERVAL 1 MONTH AS DATE)
),
past AS MATERIALIZED (
    SELECT snapshot_month, domain, ln(visits / prev_visits) AS r
    FROM pairs
    WHERE visits > 0 AND prev_visits > 0 AND month < CAST(snapshot_month || '-01' AS DATE)
),
center AS (
    SELECT snapshot_month, domain, median(r) AS center, count(*) AS n FROM past GROUP BY ALL
),
swing AS (
    SELECT s.snapshot_month, s.domain, any_value(a.center) AS center, any_value(a.n) AS n,
           1.4826 * median(abs(s.r - a.center)) AS mad
    FROM past s JOIN center a USING (snapshot_month, domain)
    GROUP BY s.snapshot_month, s.domain
)
SELECT c.snapshot_month, c.domain, c.visits, c.prev_visits, w.center, w.n, w.mad
FROM pairs c JOIN m USING (snapshot_month) LEFT JOIN swing w USING (snapshot_month, domain)
WHERE c.month = m.month_start
UNION ALL
SELECT v.snapshot_month, v.domain, v.visits, v.prev_visits, v.center, v.n, v.mad
FROM attention_visit_steps v SEMI JOIN m ON m.snapshot_month = v.snapshot_month AND m.cached
WHERE only_domain IS NULL OR v.domain = CAST(only_domain AS VARCHAR);

-- The rank, AI and channel reasons' watchlist-wide half (each month's median and MAD of every
-- domain's moves: 1 million channel-share moves at 100,000 domains) is computed once per complete
-- month into attention_month_stats (sql/migrations/0012_attention_month_stats.sql), so that a
-- one-domain question reads its own rows and a handful of stored figures. It is used while
-- attention_month_stat_sources matches sites and sources_share of the month and its previous
-- complete month (row count and order-free checksum of the columns read), else computed here.
CREATE TABLE IF NOT EXISTS attention_month_stats (
    snapshot_month VARCHAR NOT NULL, metric VARCHAR NOT NULL, channel VARCHAR, med DOUBLE, mad DOUBLE
);
CREATE TABLE IF NOT EXISTS attention_month_stat_sources (
    snapshot_month VARCHAR NOT NULL, source_table VARCHAR NOT NULL, source_month VARCHAR NOT NULL,
    row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

-- attention_stat_sources(only_month): per complete month (or only_month), sites and
-- sources_share of the month and of its previous complete month now: count and checksum.
CREATE OR REPLACE MACRO attention_stat_sources(only_month := NULL) AS TABLE
WITH stat_snaps AS MATERIALIZED (
    SELECT snapshot_month, snapshot_month AS source_month FROM complete_months
    WHERE only_month IS NULL OR snapshot_month = CAST(only_month AS VARCHAR)
    UNION ALL
    SELECT snapshot_month, previous_month FROM complete_months
    WHERE previous_month IS NOT NULL AND (only_month IS NULL OR snapshot_month = CAST(only_month AS VARCHAR))
),
stat_site_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count,
           rows_checksum(hash(s.domain, s.global_rank, s.ai_total_visits)) AS checksum
    FROM sites s SEMI JOIN stat_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
),
stat_share_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count,
           rows_checksum(hash(s.domain, s.channel, s.share)) AS checksum
    FROM sources_share s SEMI JOIN stat_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
)
SELECT n.snapshot_month, 'sites' AS source_table, n.source_month, coalesce(x.row_count, 0) AS row_count,
       CAST(coalesce(x.checksum, 0) AS UBIGINT) AS checksum
FROM stat_snaps n LEFT JOIN stat_site_now x USING (source_month)
UNION ALL
SELECT n.snapshot_month, 'sources_share', n.source_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM stat_snaps n LEFT JOIN stat_share_now x USING (source_month);

-- attention_stat_months(only_month): the complete months (or only_month) and whether
-- attention_month_stats holds them computed from exactly the sources as they are now.
CREATE OR REPLACE MACRO attention_stat_months(only_month := NULL) AS TABLE
WITH stat_stored AS (
    SELECT snapshot_month, count(*) AS n FROM attention_month_stat_sources GROUP BY ALL
)
SELECT s.snapshot_month, count(c.snapshot_month) = count(*) AND any_value(coalesce(st.n, 0)) = count(*) AS cached
FROM attention_stat_sources(only_month := only_month) s
LEFT JOIN attention_month_stat_sources c
       ON c.snapshot_month = s.snapshot_month AND c.source_table = s.source_table AND c.source_month = s.source_month
      AND c.row_count = s.row_count AND c.checksum = s.checksum
LEFT JOIN stat_stored st ON st.snapshot_month = s.snapshot_month
GROUP BY s.snapshot_month;

-- attention_month_stats_of(only_month): per complete month (or only_month), the median and
-- 1.4826 × MAD (before the floor) of the watchlist's moves against the previous complete month:
-- global_rank ln(new / old), ai_visits ln(max(new, 1) / old) and channel_share per channel
-- (new - old share). Read from attention_month_stats for a month it holds as of the sources
-- now, else computed here from every domain of the month.
CREATE OR REPLACE MACRO attention_month_stats_of(only_month := NULL) AS TABLE
WITH stat_m AS MATERIALIZED (
    SELECT a.snapshot_month, a.cached, c.previous_month
    FROM attention_stat_months(only_month := only_month) a JOIN complete_months c USING (snapshot_month)
),
stat_pair AS (
    SELECT c.snapshot_month, c.global_rank, o.global_rank AS prev_rank, c.ai_total_visits AS ai, o.ai_total_visits AS prev_ai
    FROM sites c
    JOIN stat_m ON c.snapshot_month = stat_m.snapshot_month AND NOT stat_m.cached
    JOIN sites o ON o.snapshot_month = stat_m.previous_month AND o.domain = c.domain
),
stat_rank_moves AS MATERIALIZED (
    SELECT snapshot_month, ln(global_rank::DOUBLE / prev_rank) AS m FROM stat_pair WHERE global_rank > 0 AND prev_rank > 0
),
stat_rank_med AS (
    SELECT snapshot_month, median(m) AS med FROM stat_rank_moves GROUP BY ALL
),
stat_ai_moves AS MATERIALIZED (
    SELECT snapshot_month, ln(greatest(coalesce(ai, 0), 1)::DOUBLE / prev_ai) AS m FROM stat_pair WHERE prev_ai > 0
),
stat_ai_med AS (
    SELECT snapshot_month, median(m) AS med FROM stat_ai_moves GROUP BY ALL
),
-- The month's shares are not materialized: the join streams them against the previous month's
-- hash table (both held at once need more than the load's memory limit at 100,000 domains).
stat_cur_shares AS (
    SELECT stat_m.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN stat_m ON s.snapshot_month = stat_m.snapshot_month AND NOT stat_m.cached
    WHERE s.share IS NOT NULL AND stat_m.previous_month IS NOT NULL
),
stat_prev_shares AS (
    SELECT stat_m.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN stat_m ON s.snapshot_month = stat_m.previous_month AND NOT stat_m.cached
    WHERE s.share IS NOT NULL
),
stat_channel_moves AS MATERIALIZED (
    SELECT s.snapshot_month, s.channel, s.share - o.share AS m
    FROM stat_cur_shares s JOIN stat_prev_shares o USING (snapshot_month, domain, channel)
),
stat_channel_med AS (
    SELECT snapshot_month, channel, median(m) AS med FROM stat_channel_moves GROUP BY ALL
)
SELECT r.snapshot_month, 'global_rank' AS metric, CAST(NULL AS VARCHAR) AS channel, any_value(x.med) AS med,
       1.4826 * median(abs(r.m - x.med)) AS mad
FROM stat_rank_moves r JOIN stat_rank_med x USING (snapshot_month) GROUP BY r.snapshot_month
UNION ALL
SELECT a.snapshot_month, 'ai_visits', NULL, any_value(x.med), 1.4826 * median(abs(a.m - x.med))
FROM stat_ai_moves a JOIN stat_ai_med x USING (snapshot_month) GROUP BY a.snapshot_month
UNION ALL
SELECT c.snapshot_month, 'channel_share', c.channel, any_value(x.med), 1.4826 * median(abs(c.m - x.med))
FROM stat_channel_moves c JOIN stat_channel_med x USING (snapshot_month, channel) GROUP BY c.snapshot_month, c.channel
UNION ALL
SELECT v.snapshot_month, v.metric, v.channel, v.med, v.mad
FROM attention_month_stats v SEMI JOIN stat_m ON stat_m.snapshot_month = v.snapshot_month AND stat_m.cached;

-- Each complete month's whole list is stored too (attention_lists, migration 0012), for the
-- settings a writer stores it with (the defaults, and the config's attention settings): the
-- list of a complete month changes only when its month's or the months before's data changes,
-- and a stored list makes the view, a listed domain's place and `sitewatch show` read a handful
-- of rows instead of computing 1 million channel moves. attention_list_sources keeps, per month
-- and settings, each source's row count and order-free checksum at the time it was stored: the
-- 26 history snapshots, sites and sources_share of the month and its previous complete month,
-- the month's fetch_errors and quality_checks, and one 'definition' row (the previous complete
-- month, and the stamp of the view definitions, attention_definition(): a sitewatch with other
-- definitions never reads a list the old ones made). A month whose sources differ now is
-- computed as if nothing were stored. A writer's open, the end of a run and `rebuild` store the
-- lists (warehouse.RefreshAttention).
CREATE TABLE IF NOT EXISTS attention_lists (
    snapshot_month VARCHAR NOT NULL, floor_visits DOUBLE NOT NULL, z_min DOUBLE NOT NULL,
    previous_month VARCHAR, domain VARCHAR NOT NULL, kind VARCHAR NOT NULL, metric VARCHAR, channel VARCHAR,
    value DOUBLE, previous_value DOUBLE, change_pct DOUBLE, change_points DOUBLE, z DOUBLE,
    severity VARCHAR NOT NULL, reason VARCHAR NOT NULL, score DOUBLE, rank BIGINT, domain_rank BIGINT
);
CREATE TABLE IF NOT EXISTS attention_list_sources (
    snapshot_month VARCHAR NOT NULL, floor_visits DOUBLE NOT NULL, z_min DOUBLE NOT NULL,
    source_table VARCHAR NOT NULL, source_month VARCHAR NOT NULL, row_count BIGINT NOT NULL, checksum UBIGINT NOT NULL
);

-- attention_definition(): the stamp of the view and macro definitions a writer created (a
-- writer replaces this macro with its stamp right after creating them: warehouse createViews),
-- so a stored list is read only by the definitions that computed it. Elsewhere (the BI file's
-- DuckDB) it stays 'unstamped'.
CREATE OR REPLACE MACRO attention_definition() AS 'unstamped';

-- attention_list_sources_now(only_month): per complete month (or only_month), every source of
-- its list as it is now: row count and checksum (0 and 0 when none).
CREATE OR REPLACE MACRO attention_list_sources_now(only_month := NULL) AS TABLE
WITH list_m AS MATERIALIZED (
    SELECT snapshot_month, previous_month FROM complete_months
    WHERE only_month IS NULL OR snapshot_month = CAST(only_month AS VARCHAR)
),
list_snaps AS MATERIALIZED (
    SELECT snapshot_month, snapshot_month AS source_month FROM list_m
    UNION ALL
    SELECT snapshot_month, previous_month FROM list_m WHERE previous_month IS NOT NULL
),
list_site_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count,
           rows_checksum(hash(s.domain, s.total_visits, s.global_rank, s.ai_total_visits)) AS checksum
    FROM sites s SEMI JOIN list_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
),
list_share_now AS (
    SELECT s.snapshot_month AS source_month, count(*) AS row_count, rows_checksum(hash(s.domain, s.channel, s.share)) AS checksum
    FROM sources_share s SEMI JOIN list_snaps n ON n.source_month = s.snapshot_month
    GROUP BY s.snapshot_month
),
list_error_now AS (
    SELECT e.snapshot_month, count(*) AS row_count,
           rows_checksum(hash(e.domain, e.http_status, e.endpoint, e.code, e.occurred_at)) AS checksum
    FROM fetch_errors e SEMI JOIN list_m USING (snapshot_month)
    GROUP BY e.snapshot_month
),
list_quality_now AS (
    SELECT q.snapshot_month, count(*) AS row_count,
           rows_checksum(hash(q.domain, q.severity, q."check", q.table_name, q.observed, q.expected)) AS checksum
    FROM quality_checks q SEMI JOIN list_m USING (snapshot_month)
    GROUP BY q.snapshot_month
),
list_definitions AS (
    SELECT hash(attention_definition()) AS checksum
)
SELECT snapshot_month, 'traffic_history' AS source_table, source_month, row_count, checksum
FROM attention_history_sources(only_month := only_month)
UNION ALL
SELECT n.snapshot_month, 'sites', n.source_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_snaps n LEFT JOIN list_site_now x USING (source_month)
UNION ALL
SELECT n.snapshot_month, 'sources_share', n.source_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_snaps n LEFT JOIN list_share_now x USING (source_month)
UNION ALL
SELECT m.snapshot_month, 'fetch_errors', m.snapshot_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_m m LEFT JOIN list_error_now x USING (snapshot_month)
UNION ALL
SELECT m.snapshot_month, 'quality_checks', m.snapshot_month, coalesce(x.row_count, 0), CAST(coalesce(x.checksum, 0) AS UBIGINT)
FROM list_m m LEFT JOIN list_quality_now x USING (snapshot_month)
UNION ALL
SELECT m.snapshot_month, 'definition', coalesce(m.previous_month, ''), 0, CAST(d.checksum AS UBIGINT)
FROM list_m m, list_definitions d;

-- attention_list_months(for_floor, for_z, only_month): the complete months (or only_month) and
-- whether attention_lists holds their list for these settings (size floor, threshold) computed
-- from exactly the sources as they are now.
CREATE OR REPLACE MACRO attention_list_months(for_floor, for_z, only_month := NULL) AS TABLE
WITH list_kept AS (
    SELECT snapshot_month, count(*) AS n FROM attention_list_sources
    WHERE floor_visits = CAST(for_floor AS DOUBLE) AND z_min = CAST(for_z AS DOUBLE)
    GROUP BY ALL
)
SELECT s.snapshot_month, count(c.snapshot_month) = count(*) AND any_value(coalesce(k.n, 0)) = count(*) AS stored
FROM attention_list_sources_now(only_month := only_month) s
LEFT JOIN attention_list_sources c
       ON c.snapshot_month = s.snapshot_month AND c.source_table = s.source_table AND c.source_month = s.source_month
      AND c.row_count = s.row_count AND c.checksum = s.checksum
      AND c.floor_visits = CAST(for_floor AS DOUBLE) AND c.z_min = CAST(for_z AS DOUBLE)
LEFT JOIN list_kept k ON k.snapshot_month = s.snapshot_month
GROUP BY s.snapshot_month;

-- needs_attention_all(min_visits, threshold, only_month, only_domain): every complete month, or
-- only_month alone when given (a constant: sitewatch reads one month this way at half the cost
-- of two). only_domain (a constant) returns that domain's rows only, reading only its own
-- history: whether it is listed, and why, at a fraction of the cost (`sitewatch show` asks this
-- first). Its rank and domain_rank are then NULL: a place in the list needs every domain's rows.
-- A month whose list attention_lists holds for these settings, as of its sources now, is read
-- from there (list_m); the others are computed (p holds only those).
CREATE OR REPLACE MACRO needs_attention_all(min_visits, threshold, only_month := NULL, only_domain := NULL) AS TABLE
WITH list_m AS MATERIALIZED (
    SELECT * FROM attention_list_months(coalesce(min_visits, 10000), coalesce(threshold, 3), only_month := only_month)
),
p AS MATERIALIZED (
    SELECT c.snapshot_month, c.previous_month,
           CAST(c.snapshot_month || '-01' AS DATE) AS month_start,
           strftime(CAST(c.snapshot_month || '-01' AS DATE) - INTERVAL 25 MONTH, '%Y-%m') AS oldest_snapshot,
           CAST(coalesce(min_visits, 10000) AS DOUBLE) AS floor_visits,
           CAST(coalesce(threshold, 3) AS DOUBLE) AS z_min
    FROM complete_months c
    SEMI JOIN list_m l ON l.snapshot_month = c.snapshot_month AND NOT l.stored
),
cur_sites AS MATERIALIZED (
    SELECT s.snapshot_month, s.domain, s.total_visits, s.global_rank, s.ai_total_visits
    FROM sites s JOIN p ON s.snapshot_month = p.snapshot_month
    WHERE only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR)
),
prev_sites AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.total_visits, s.global_rank, s.ai_total_visits
    FROM sites s JOIN p ON s.snapshot_month = p.previous_month
    WHERE only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR)
),
-- Each domain's visits in the month and the month before, with its usual monthly swing: from
-- attention_visit_steps while the history is unchanged, else from the history here.
month_steps AS MATERIALIZED (
    SELECT * FROM attention_visit_steps_of(only_month := only_month, only_domain := only_domain)
),
visit_z AS MATERIALIZED (
    SELECT c.snapshot_month, c.domain, c.visits, c.prev_visits, ln(c.visits / c.prev_visits) AS r, c.center, c.n,
           greatest(c.mad, 0.02) AS sd,
           (ln(c.visits / c.prev_visits) - c.center) / greatest(c.mad, 0.02) AS z
    FROM month_steps c
    SEMI JOIN cur_sites s ON s.snapshot_month = c.snapshot_month AND s.domain = c.domain
    WHERE c.visits > 0 AND c.prev_visits > 0
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
    SELECT snapshot_month, domain, prev_visits FROM month_steps
    SEMI JOIN cur_sites c USING (snapshot_month, domain)
    WHERE visits = 0 AND prev_visits > 0
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
-- The watchlist's medians and MADs of the month (attention_month_stats_of), with each reason's floor.
month_stats AS MATERIALIZED (
    SELECT * FROM attention_month_stats_of(only_month := only_month)
),
rank_stats AS (
    SELECT snapshot_month, med, greatest(mad, 0.05) AS sd FROM month_stats WHERE metric = 'global_rank'
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
ai_stats AS (
    SELECT snapshot_month, med, greatest(mad, 0.10) AS sd FROM month_stats WHERE metric = 'ai_visits'
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
-- Each side's shares picked by its month first: joined on (domain, channel) with the months
-- as a later filter, every month's shares met every other month's (4 million rows for 1 million
-- at 100,000 domains, 7 s of the list's operator time).
cur_shares AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN p ON s.snapshot_month = p.snapshot_month
    WHERE s.share IS NOT NULL AND p.previous_month IS NOT NULL
      AND (only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR))
),
prev_shares AS MATERIALIZED (
    SELECT p.snapshot_month, s.domain, s.channel, s.share
    FROM sources_share s JOIN p ON s.snapshot_month = p.previous_month
    WHERE s.share IS NOT NULL
      AND (only_domain IS NULL OR s.domain = CAST(only_domain AS VARCHAR))
),
channel_moves AS MATERIALIZED (
    SELECT s.snapshot_month, s.domain, s.channel, o.share AS prev_share, s.share, s.share - o.share AS m
    FROM cur_shares s
    JOIN prev_shares o USING (snapshot_month, domain, channel)
),
channel_stats AS (
    SELECT snapshot_month, channel, med, greatest(mad, 0.02) AS sd FROM month_stats WHERE metric = 'channel_share'
),
-- The channel falls that pass their test, whichever channel was the domain's top: the top
-- channel is then found for these few domains only, not for every domain of the month.
channel_falls AS MATERIALIZED (
    SELECT c.*, s.med, s.sd
    FROM channel_moves c JOIN channel_stats s USING (snapshot_month, channel) JOIN p USING (snapshot_month)
    WHERE (c.m - s.med) / s.sd <= -p.z_min AND c.m <= -0.05
),
-- The channel with the largest share the month before (the first by name on a tie): a max and
-- a min over plain columns, not an arg_min over a struct.
top_share AS (
    SELECT snapshot_month, domain, max(share) AS share
    FROM prev_shares SEMI JOIN channel_falls USING (snapshot_month, domain)
    GROUP BY ALL
),
top_channel AS (
    SELECT snapshot_month, domain, min(channel) AS channel
    FROM prev_shares JOIN top_share USING (snapshot_month, domain, share)
    GROUP BY ALL
),
channel_rows AS (
    SELECT c.snapshot_month, c.domain, 'top_channel_fell' AS kind, 'channel_share' AS metric, c.channel,
           100 * c.share AS value, 100 * c.prev_share AS previous_value,
           CAST(NULL AS DOUBLE) AS change_pct, 100 * c.m AS change_points,
           (c.m - c.med) / c.sd AS z, -(c.m - c.med) / c.sd AS score,
           CASE WHEN -(c.m - c.med) / c.sd >= 2 * p.z_min THEN 'high' ELSE 'medium' END AS severity,
           CASE c.channel
               WHEN 'organic_search' THEN 'Organic search' WHEN 'paid_search' THEN 'Paid search'
               WHEN 'organic_social' THEN 'Organic social' WHEN 'paid_social' THEN 'Paid social'
               WHEN 'generative_ai' THEN 'Generative AI' WHEN 'display_ads' THEN 'Display ads'
               ELSE upper(c.channel[1]) || c.channel[2:] END
           || ', its top channel, fell from ' || printf('%.1f', 100 * c.prev_share) || '% to '
           || printf('%.1f', 100 * c.share) || '% of its visits'
           || ' — the watchlist''s share of it moved ±' || printf('%.1f', 100 * c.sd) || ' points this month' AS reason,
           0 AS tier, coalesce(pr.visits, pr.prev_visits) AS size
    FROM channel_falls c
    JOIN top_channel t USING (snapshot_month, domain, channel)
    JOIN pair pr USING (snapshot_month, domain)
    JOIN p USING (snapshot_month)
    WHERE coalesce(pr.visits, pr.prev_visits) >= p.floor_visits
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
    CASE WHEN only_domain IS NULL THEN r.rank END AS rank,
    CASE WHEN only_domain IS NULL THEN CAST(dense_rank() OVER (PARTITION BY r.snapshot_month ORDER BY r.domain_first) AS BIGINT) END AS domain_rank,
    p.floor_visits AS min_visits,
    p.z_min AS threshold
FROM firsts r JOIN p USING (snapshot_month)
WHERE only_domain IS NULL OR r.domain = CAST(only_domain AS VARCHAR)
UNION ALL
SELECT l.snapshot_month, l.previous_month, l.domain, l.kind, l.metric, l.channel, l.value, l.previous_value,
       l.change_pct, l.change_points, l.z, l.severity, l.reason, l.score,
       CASE WHEN only_domain IS NULL THEN l.rank END, CASE WHEN only_domain IS NULL THEN l.domain_rank END,
       l.floor_visits, l.z_min
FROM attention_lists l
SEMI JOIN list_m m ON m.snapshot_month = l.snapshot_month AND m.stored
WHERE l.floor_visits = CAST(coalesce(min_visits, 10000) AS DOUBLE) AND l.z_min = CAST(coalesce(threshold, 3) AS DOUBLE)
  AND (only_domain IS NULL OR l.domain = CAST(only_domain AS VARCHAR));

-- needs_attention_in filters needs_attention_all by month: the month never enters the steps,
-- so a caller may pass a column (LATERAL) as well as a constant.
CREATE OR REPLACE MACRO needs_attention_in(for_month := NULL, min_visits := NULL, threshold := NULL) AS TABLE
SELECT * FROM needs_attention_all(min_visits, threshold) n
WHERE for_month IS NULL OR n.snapshot_month = CAST(for_month AS VARCHAR)
ORDER BY n.snapshot_month, n.rank;

CREATE OR REPLACE VIEW needs_attention AS SELECT * FROM needs_attention_in();

COMMENT ON VIEW needs_attention IS 'For every complete month, the watchlist domains whose move is unusual for them (visits against their own earlier months, a fall to zero; rank, AI-referred visits and top channel against the watchlist''s moves), whose data went missing, or that failed a quality check: one row per month, domain and reason, with one column per unit and the reason in words, ranked within the month (rank 1 first). Only rows that pass their test: a quiet month has none. Candidates not on the watchlist are never rows (discover_candidates). Defaults: size floor 10,000 visits, threshold 3; the table macro needs_attention_in(for_month, min_visits, threshold) takes other values (sitewatch passes attention.min_visits and attention.threshold from the config).';
COMMENT ON COLUMN needs_attention.snapshot_month IS 'Complete snapshot (YYYY-MM) the row is for; filter on it for one month.';
COMMENT ON COLUMN needs_attention.previous_month IS 'The complete snapshot before it (YYYY-MM) that rank, AI, channel, zero and missing-data reasons compare with; NULL when there is none.';
COMMENT ON COLUMN needs_attention.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN needs_attention.kind IS 'vanished (visits fell to 0), visits_fell, visits_rose (unusual for the domain''s own months), rank_lost, ai_visits_fell, top_channel_fell (unusual against the watchlist this month), data_missing, or quality_failed.';
COMMENT ON COLUMN needs_attention.metric IS 'What value and previous_value measure: visits, global_rank, ai_visits or channel_share; NULL for quality_failed.';
COMMENT ON COLUMN needs_attention.channel IS 'The channel of a channel_share row (a key of sources_share, e.g. organic_search); NULL otherwise.';
COMMENT ON COLUMN needs_attention.value IS 'The metric in the month, in its unit: visits (whole visits, estimate), global_rank (1 = most visited), ai_visits (whole visits), channel_share (percent 0-100); NULL when missing.';
COMMENT ON COLUMN needs_attention.previous_value IS 'The metric the month before, same unit (visits: the previous calendar month of the traffic history; the others: the previous complete month).';
COMMENT ON COLUMN needs_attention.change_pct IS 'For visits, global_rank and ai_visits: value / previous_value - 1 in percent (-35.0 = a 35 % fall; -100 = vanished; for a rank, positive = worse); NULL for other metrics.';
COMMENT ON COLUMN needs_attention.change_points IS 'For channel_share: value - previous_value in percentage points (-25.0 = 25 points lost); NULL for other metrics.';
COMMENT ON COLUMN needs_attention.z IS 'The move in units of its usual swing: (move - median move) / max(1.4826 × MAD, floor); negative = down (a rank''s z is positive when it worsened). NULL for vanished, data_missing and quality_failed.';
COMMENT ON COLUMN needs_attention.severity IS 'high when |z| >= 2 × threshold, and always for vanished, missing data and quality errors; medium when |z| >= threshold and for quality warnings. The same words on every surface.';
COMMENT ON COLUMN needs_attention.reason IS 'Why the domain is listed, in words, e.g. "fell 35.0% (2.00M → 1.30M visits) — its months usually move ±3.0%"; figures in the number style of the report.';
COMMENT ON COLUMN needs_attention.score IS 'What the list is ordered by after vanished rows (larger first): |z| for the measured reasons, 2 × threshold for vanished, missing data and quality errors, the threshold for quality warnings.';
COMMENT ON COLUMN needs_attention.rank IS 'Position in the month''s list, 1 = first: vanished first, then by score, then the larger fall, then the larger domain, then domain and kind.';
COMMENT ON COLUMN needs_attention.domain_rank IS 'Position of the domain in the month''s list, 1 = first: the domains ordered by their best-ranked row, so a surface that groups a domain''s reasons keeps the list''s order.';
COMMENT ON COLUMN needs_attention.min_visits IS 'The size floor the list was computed with (visits in the month or the month before).';
COMMENT ON COLUMN needs_attention.threshold IS 'The |z| a move must reach to be listed.';
