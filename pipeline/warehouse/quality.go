package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"sitewatch/pipeline/model"
)

// Thresholds of the quality checks (documented in the data dictionary).
const (
	// ChannelShareTolerance is how far a domain's channel shares may sum away from 1.
	ChannelShareTolerance = 0.02
	// GeographyShareTolerance absorbs rounding when geography shares sum to at most 1.
	GeographyShareTolerance = 0.001
	// AIShareTolerance absorbs rounding when AI platform shares (percent) sum to at most 100.
	AIShareTolerance = 0.5
	// VisitsJumpThreshold flags a data month whose visits are more than 1+threshold times, or
	// less than 1/(1+threshold) of, the month before (0.5: above +50% or below -33%).
	VisitsJumpThreshold = 0.5
)

// QualityCheckSummary is one check's outcome on a snapshot, over every table it covers.
type QualityCheckSummary struct {
	Check    string
	Tables   int    // tables the check covered
	Errors   int    // error findings (one per table and domain)
	Warnings int    // warn findings
	Severity string // the worst: SeverityError, SeverityWarn or SeverityOK
}

// qualityCheck is one check on one table. Its query takes the snapshot month as its only
// parameter and returns (domain, observed, observed_value, expected), one row per finding.
type qualityCheck struct {
	name, table, severity, expected, query string
}

// RunQualityChecks runs every data-quality check on month and replaces that month's rows of
// quality_checks with the result, in one transaction (idempotent). It returns the error and
// warn findings, errors first. A check never blocks loading: callers log the findings. It
// returns an error when month is not YYYY-MM, holds no loaded domain, or a query fails.
func (w *Warehouse) RunQualityChecks(ctx context.Context, month string) ([]model.QualityFinding, error) {
	if err := checkSnapshot(month); err != nil {
		return nil, fmt.Errorf("quality checks: %w", err)
	}
	var findings []model.QualityFinding
	err := w.withAnalysisMemory(ctx, func() error {
		return w.inTx(ctx, func(ctx context.Context) error {
			var loaded int
			if err := w.load.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE snapshot_month = ?`, month).Scan(&loaded); err != nil {
				return err
			}
			if loaded == 0 {
				return fmt.Errorf("snapshot %s has no loaded domain: nothing to check", month)
			}
			if _, err := w.load.ExecContext(ctx, `DELETE FROM quality_checks WHERE snapshot_month = ?`, month); err != nil {
				return err
			}
			now := time.Now().UTC()
			passes := map[string]int64{"sites": qualityPasses(int64(loaded))} // table -> passes, counted once
			for _, c := range qualityChecks() {
				if _, ok := passes[c.table]; !ok {
					var rows int64
					if err := w.load.QueryRowContext(ctx, `SELECT count(*) FROM `+c.table+` WHERE snapshot_month = ?`, month).Scan(&rows); err != nil {
						return fmt.Errorf("count the rows of %s: %w", c.table, err)
					}
					passes[c.table] = qualityPasses(rows)
				}
				if err := w.runQualityCheck(ctx, c, month, passes[c.table], now); err != nil {
					return fmt.Errorf("check %s on %s: %w", c.name, c.table, err)
				}
			}
			var err error
			findings, err = readIssues(ctx, w.load, month)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("quality checks of %s: %w", month, err)
	}
	return findings, nil
}

// runQualityCheck runs c in passes over disjoint sets of the month's domains and records its
// findings, or one ok row when no pass found anything.
func (w *Warehouse) runQualityCheck(ctx context.Context, c qualityCheck, month string, passes int64, now time.Time) error {
	var found int64
	for part := range passes {
		res, err := w.load.ExecContext(ctx, `INSERT INTO quality_checks
			(snapshot_month, "check", table_name, domain, observed, expected, severity, observed_value, checked_at)
			SELECT ?, ?, ?, f.domain, f.observed, f.expected, ?, f.observed_value, ? FROM (`+c.query+`) f`,
			month, c.name, c.table, c.severity, now, month, passes, part)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		found += n
	}
	if found > 0 {
		return nil
	}
	_, err := w.load.ExecContext(ctx, `INSERT INTO quality_checks
		(snapshot_month, "check", table_name, domain, observed, expected, severity, observed_value, checked_at)
		VALUES (?, ?, ?, NULL, 'no findings', ?, 'ok', NULL, ?)`, month, c.name, c.table, c.expected, now)
	return err
}

// QualityIssues returns month's error and warn findings from quality_checks, errors first,
// then by check, table and domain. It works on a read-only warehouse; it returns an error when
// the table cannot be read.
func QualityIssues(ctx context.Context, db *sql.DB, month string) ([]model.QualityFinding, error) {
	out, err := readIssues(ctx, db, month)
	if err != nil {
		return nil, fmt.Errorf("read quality findings of %s: %w", month, err)
	}
	return out, nil
}

func readIssues(ctx context.Context, q Querier, month string) ([]model.QualityFinding, error) {
	var out []model.QualityFinding
	err := QueryEach(ctx, q, `SELECT snapshot_month, "check", table_name, coalesce(domain, ''), observed, expected,
			severity, observed_value, checked_at
		FROM quality_checks WHERE snapshot_month = ? AND severity <> 'ok'
		ORDER BY severity = 'error' DESC, "check", table_name, domain`, []any{month}, func(rows *sql.Rows) error {
		var f model.QualityFinding
		var v sql.NullFloat64
		if err := rows.Scan(&f.SnapshotMonth, &f.Check, &f.Table, &f.Domain, &f.Observed, &f.Expected,
			&f.Severity, &v, &f.CheckedAt); err != nil {
			return err
		}
		if v.Valid {
			f.ObservedValue = &v.Float64
		}
		f.CheckedAt = f.CheckedAt.UTC()
		out = append(out, f)
		return nil
	})
	return out, err
}

// QualitySummary returns one line per check run on month (worst severity first, then by
// name); empty when the checks never ran on month. It works on a read-only warehouse; it
// returns an error when quality_checks cannot be read.
func QualitySummary(ctx context.Context, db *sql.DB, month string) ([]QualityCheckSummary, error) {
	var out []QualityCheckSummary
	err := QueryEach(ctx, db, `SELECT "check", count(DISTINCT table_name),
			count(*) FILTER (WHERE severity = 'error'), count(*) FILTER (WHERE severity = 'warn')
		FROM quality_checks WHERE snapshot_month = ?
		GROUP BY "check"
		ORDER BY count(*) FILTER (WHERE severity = 'error') > 0 DESC,
		         count(*) FILTER (WHERE severity = 'warn') > 0 DESC, "check"`, []any{month}, func(rows *sql.Rows) error {
		var s QualityCheckSummary
		if err := rows.Scan(&s.Check, &s.Tables, &s.Errors, &s.Warnings); err != nil {
			return err
		}
		switch {
		case s.Errors > 0:
			s.Severity = model.SeverityError
		case s.Warnings > 0:
			s.Severity = model.SeverityWarn
		default:
			s.Severity = model.SeverityOK
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read quality summary of %s: %w", month, err)
	}
	return out, nil
}

// QualitySummary is the package-level QualitySummary on this warehouse.
func (w *Warehouse) QualitySummary(ctx context.Context, month string) ([]QualityCheckSummary, error) {
	return QualitySummary(ctx, w.db, month)
}

// monthParam binds the query's parameters: the snapshot month as p.m, and the share of the
// month's domains a pass covers, p.part of p.parts (see qualityPasses).
const monthParam = `WITH p AS (SELECT CAST(? AS VARCHAR) AS m, CAST(? AS UBIGINT) AS parts, CAST(? AS UBIGINT) AS part)`

// inPass restricts a scan of a snapshot table (alias the table's name or alias) to the month
// and to the domains of this pass.
func inPass(alias string) string {
	return alias + `.snapshot_month = p.m AND hash(` + alias + `.domain) % p.parts = p.part`
}

// qualityRowsPerPass is about how many of a table's rows one pass of a check keeps. Every
// check's findings are per domain, so a check runs over disjoint sets of domains (by the hash
// of the name): each pass scans the table but keeps only its own domains' rows, so the hash
// tables of its GROUP BYs hold one pass's keys, not the month's, and the memory of the checks
// stays the same whatever the size of the watchlist (a variable for the tests).
var qualityRowsPerPass int64 = 200_000

// maxQualityPasses bounds the passes of a check. Every pass scans the whole table, so passes
// growing with the rows made the checks quadratic in the month: 8.5 minutes of a run's end at
// a million domains (issue 34), where up to ~150 passes scanned a table of ~20 million rows
// each. Beyond the bound a pass keeps more rows; DuckDB's aggregation stays under the memory
// limit and spills to disk beyond it. Up to 100,000 domains no table reaches the bound.
const maxQualityPasses = 16

// qualityPasses is the number of passes of a check over a table holding rows of the month.
func qualityPasses(rows int64) int64 {
	return min(maxQualityPasses, max(1, (rows+qualityRowsPerPass-1)/qualityRowsPerPass))
}

// dataMonths is each domain's data month in the snapshot: the API's reporting period
// (traffic.period), else the month of its snapshot date, else the snapshot itself.
var dataMonths = `dm AS (
	SELECT domain, CAST(coalesce(try_strptime(traffic_period, '%Y-%m'), date_trunc('month', snapshot_date),
		strptime(snapshot_month, '%Y-%m')) AS DATE) AS data_month
	FROM sites, p WHERE ` + inPass("sites") + `)`

// qualityChecks lists every check, each on one table. The thresholds are the constants above.
func qualityChecks() []qualityCheck {
	checks := []qualityCheck{
		{name: "channel_share_sum", table: "sources_share", severity: model.SeverityWarn,
			expected: fmt.Sprintf("1 ± %g", ChannelShareTolerance),
			query: fmt.Sprintf(monthParam+`
				SELECT domain, printf('%%.4f', s) AS observed, s AS observed_value, '1 ± %[1]g' AS expected
				FROM (SELECT domain, sum(share) AS s FROM sources_share, p
				      WHERE %[2]s GROUP BY domain HAVING count(share) > 0)
				WHERE abs(s - 1) > %[1]g`, ChannelShareTolerance, inPass("sources_share"))},
		{name: "geography_share_sum", table: "geography_share", severity: model.SeverityError,
			expected: "<= 1",
			query: fmt.Sprintf(monthParam+`
				SELECT domain, printf('%%.4f', s) AS observed, s AS observed_value, '<= 1' AS expected
				FROM (SELECT domain, sum(share) AS s FROM geography_share, p
				      WHERE %[2]s GROUP BY domain HAVING count(share) > 0)
				WHERE s > 1 + %[1]g`, GeographyShareTolerance, inPass("geography_share"))},
		{name: "ai_share_sum", table: "ai_platforms", severity: model.SeverityWarn,
			expected: "<= 100 (percent)",
			query: fmt.Sprintf(monthParam+`
				SELECT domain, printf('%%.2f', s) AS observed, s AS observed_value, '<= 100 (percent)' AS expected
				FROM (SELECT domain, sum(share_pct) AS s FROM ai_platforms, p
				      WHERE %[2]s GROUP BY domain HAVING count(share_pct) > 0)
				WHERE s > 100 + %[1]g`, AIShareTolerance, inPass("ai_platforms"))},
		historyContiguous(),
		visitsJump(),
	}
	checks = append(checks,
		rangeCheck("share_range", "sources_share", "0 to 1 (decimal share)", "%[1]s < 0 OR %[1]s > 1", "share"),
		rangeCheck("share_range", "geography_share", "0 to 1 (decimal share)", "%[1]s < 0 OR %[1]s > 1", "share"),
		rangeCheck("share_range", "sites", "0 to 1 (decimal share)", "%[1]s < 0 OR %[1]s > 1", "bounce_rate", "ai_global_traffic_share"),
		rangeCheck("ai_share_range", "ai_platforms", "0 to 100 (percent)", "%[1]s < 0 OR %[1]s > 100", "share_pct"),
		rangeCheck("ai_share_range", "ai_platform_history", "0 to 100 (percent)", "%[1]s < 0 OR %[1]s > 100", "share_pct"),
		rangeCheck("visits_nonnegative", "sites", ">= 0", "%[1]s < 0", "total_visits", "ai_total_visits"),
		rangeCheck("visits_nonnegative", "traffic_history", ">= 0", "%[1]s < 0", "visits"),
		rangeCheck("visits_nonnegative", "similar_sites", ">= 0", "%[1]s < 0", "total_visits"),
	)
	for _, k := range naturalKeys {
		checks = append(checks, duplicateKeys(k.table, k.columns))
	}
	return checks
}

// naturalKeys are the columns that identify a row of each snapshot table within a snapshot
// and domain (the "one row per" of docs/data-dictionary.md).
var naturalKeys = []struct {
	table   string
	columns []string
}{
	{"sites", nil},
	{"traffic_history", []string{"month"}},
	{"sources_share", []string{"channel"}},
	{"geography_share", []string{"country_code"}},
	{"keywords", []string{"keyword"}},
	{"ai_platforms", []string{"platform"}},
	{"ai_platform_history", []string{"platform", "month"}},
	{"ai_prompts", []string{"prompt"}},
	{"similar_sites", []string{"similar_domain"}},
	{"site_tags", []string{"tag"}},
}

// rangeCheck flags, per domain and column, the values of table for which bad (a format
// string over the column name) holds.
func rangeCheck(name, table, expected, bad string, columns ...string) qualityCheck {
	var parts []string
	for _, c := range columns {
		parts = append(parts, fmt.Sprintf(`SELECT domain, '%s' AS col, CAST(%s AS DOUBLE) AS v FROM %s, p
			WHERE %s AND (%s)`, c, c, table, inPass(table), fmt.Sprintf(bad, c)))
	}
	q := monthParam + `
		SELECT domain,
		       col || ': ' || count(*) || CASE WHEN count(*) = 1 THEN ' value ' ELSE ' values from ' || printf('%g', min(v)) || ' to ' END
		           || printf('%g', max(v)) AS observed,
		       CASE WHEN max(v) > 0 THEN max(v) ELSE min(v) END AS observed_value,
		       '` + expected + `' AS expected
		FROM (` + strings.Join(parts, " UNION ALL ") + `)
		GROUP BY domain, col`
	return qualityCheck{name: name, table: table, severity: model.SeverityError, expected: expected, query: q}
}

// duplicateKeys flags each domain of table holding a natural key more than once. It first
// counts the keys' 64-bit hashes, then looks at the real keys only where a hash repeats:
// grouping every row by its text key made this check the run's memory peak (a hash table of
// every key of the month), and a hash collision only costs the second, exact pass a look.
func duplicateKeys(table string, columns []string) qualityCheck {
	key, keyText := "domain", "domain"
	expected := "one row per domain"
	if len(columns) > 0 {
		key = "domain, " + strings.Join(columns, ", ")
		keyText = "concat_ws(' / ', " + strings.Join(columns, ", ") + ")"
		expected = "one row per domain and " + strings.Join(columns, ", ")
	}
	q := monthParam + `,
		repeated AS (SELECT hash(` + key + `) AS h FROM ` + table + `, p
		             WHERE ` + inPass(table) + ` GROUP BY h HAVING count(*) > 1)
		SELECT domain, count(*) || CASE WHEN count(*) = 1 THEN ' key' ELSE ' keys' END || ' repeated, e.g. '
		           || arg_max(` + keyText + `, n) || ' (' || max(n) || ' rows)' AS observed,
		       CAST(count(*) AS DOUBLE) AS observed_value, '` + expected + `' AS expected
		FROM (SELECT ` + key + `, count(*) AS n FROM ` + table + `, p
		      WHERE ` + inPass(table) + ` AND hash(` + key + `) IN (SELECT h FROM repeated)
		      GROUP BY ` + key + ` HAVING count(*) > 1)
		GROUP BY domain`
	return qualityCheck{name: "duplicate_keys", table: table, severity: model.SeverityError, expected: expected, query: q}
}

// historyContiguous flags a domain whose traffic history skips a month or does not end at
// the domain's data month.
func historyContiguous() qualityCheck {
	q := monthParam + `, ` + dataMonths + `,
		h AS (SELECT domain, count(DISTINCT month) AS n, min(month) AS first, max(month) AS last
		      FROM traffic_history, p WHERE ` + inPass("traffic_history") + ` GROUP BY domain),
		s AS (SELECT h.*, datediff('month', first, last) + 1 - n AS missing, dm.data_month
		      FROM h LEFT JOIN dm USING (domain))
		SELECT domain,
		       'months ' || strftime(first, '%Y-%m') || '..' || strftime(last, '%Y-%m') || ', ' || missing || ' missing' AS observed,
		       CAST(missing AS DOUBLE) AS observed_value,
		       'contiguous, ending ' || coalesce(strftime(data_month, '%Y-%m'), 'at the data month') AS expected
		FROM s
		WHERE missing > 0 OR last <> data_month`
	return qualityCheck{name: "history_contiguous", table: "traffic_history", severity: model.SeverityWarn,
		expected: "contiguous, ending at the data month (traffic_period)", query: q}
}

// visitsJump flags a domain whose data-month visits moved beyond VisitsJumpThreshold from the
// month before, in the snapshot's own history (a volume anomaly, as dbt/Elementary call it).
func visitsJump() qualityCheck {
	up := 1 + VisitsJumpThreshold
	expected := fmt.Sprintf("within +%.0f%% / -%.0f%% of the month before", VisitsJumpThreshold*100, (1-1/up)*100)
	q := monthParam + `, ` + dataMonths + `,
		v AS (SELECT t.domain, dm.data_month,
		             max(t.visits) FILTER (WHERE t.month = dm.data_month) AS cur,
		             max(t.visits) FILTER (WHERE t.month = CAST(dm.data_month - INTERVAL 1 MONTH AS DATE)) AS prev
		      FROM traffic_history t JOIN dm ON dm.domain = t.domain, p
		      WHERE ` + inPass("t") + `
		      GROUP BY t.domain, dm.data_month)
		SELECT domain,
		       strftime(data_month, '%Y-%m') || ': ' || prev || ' -> ' || cur || ' visits'
		           || CASE WHEN prev > 0 THEN printf(' (%+.1f%%)', (cur / prev - 1) * 100) ELSE '' END AS observed,
		       CASE WHEN prev > 0 THEN cur / prev - 1 END AS observed_value,
		       '` + expected + `' AS expected
		FROM v
		WHERE (prev > 0 AND (cur > prev * ` + fmt.Sprint(up) + ` OR cur < prev / ` + fmt.Sprint(up) + `))
		   OR (prev = 0 AND cur > 0)`
	return qualityCheck{name: "visits_jump", table: "traffic_history", severity: model.SeverityWarn, expected: expected, query: q}
}

// QualityCheckDoc describes one check for the data dictionary.
type QualityCheckDoc struct {
	Name     string
	Severity string
	Tables   []string
	Rule     string
}

// checkRules says what each check requires, with its threshold.
var checkRules = map[string]string{
	"channel_share_sum": fmt.Sprintf("A domain's channel shares (sources_share) sum to 1 ± %g. Off means the API's channel split "+
		"is partial or inconsistent; the shares are stored as returned.", ChannelShareTolerance),
	"geography_share_sum": fmt.Sprintf("A domain's country shares sum to at most 1 (+%g for rounding); less is normal "+
		"(only the top countries are listed).", GeographyShareTolerance),
	"ai_share_sum":   fmt.Sprintf("A domain's AI platform shares (percent) sum to at most 100 (+%g for rounding).", AIShareTolerance),
	"share_range":    "Every decimal share is within 0-1: sources_share.share, geography_share.share, sites.bounce_rate, sites.ai_global_traffic_share.",
	"ai_share_range": "Every AI platform share_pct is within 0-100 (percent), in ai_platforms and ai_platform_history.",
	"visits_nonnegative": "Visit counts are not negative: sites.total_visits, sites.ai_total_visits, traffic_history.visits, " +
		"similar_sites.total_visits.",
	"duplicate_keys": "No natural key appears twice within a snapshot and domain (sites: the domain; traffic_history: month; " +
		"sources_share: channel; geography_share: country_code; keywords: keyword; ai_platforms: platform; " +
		"ai_platform_history: platform and month; ai_prompts: prompt; similar_sites: similar_domain; site_tags: tag).",
	"history_contiguous": "A domain's traffic history has no missing month between its first and last, and ends at the data " +
		"month (traffic_period, else the month of snapshot_date).",
	"visits_jump": fmt.Sprintf("Volume anomaly: the data month's visits are within +%.0f%% / -%.0f%% of the month before in "+
		"the same snapshot's history (a rise from 0 is flagged too). A jump may be real; look before trusting it.",
		VisitsJumpThreshold*100, (1-1/(1+VisitsJumpThreshold))*100),
}

// QualityCheckDocs lists every check RunQualityChecks runs, by name, with its severity, the
// tables it reads and its rule.
func QualityCheckDocs() []QualityCheckDoc {
	var docs []QualityCheckDoc
	index := map[string]int{}
	for _, c := range qualityChecks() {
		i, ok := index[c.name]
		if !ok {
			i = len(docs)
			index[c.name] = i
			docs = append(docs, QualityCheckDoc{Name: c.name, Severity: c.severity, Rule: checkRules[c.name]})
		}
		docs[i].Tables = append(docs[i].Tables, c.table)
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].Name < docs[j].Name })
	return docs
}

// checkQuietly runs the quality checks of month and logs the outcome. A check never blocks
// loading or rebuilding, so a failure to run them is logged, not returned.
func (w *Warehouse) checkQuietly(ctx context.Context, month string) {
	findings, err := w.RunQualityChecks(ctx, month)
	if err != nil {
		w.log.Warn("quality checks did not run", "snapshot", month, "err", err)
		return
	}
	errs := 0
	for _, f := range findings {
		if f.Severity == model.SeverityError {
			errs++
		}
	}
	w.log.Info("quality checks", "snapshot", month, "errors", errs, "warnings", len(findings)-errs)
}
