package warehouse

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// This file holds the benchmark's reference path — DuckDB's own read_json + UNNEST into the
// same tables — and the fixtures both paths load: n generated domains stored in raw_responses
// and, for read_json, the same bodies as newline-delimited JSON.

// storeGenerated lands the generated overview and similar bodies of n domains in
// raw_responses (in chunks through Arrow, without deriving) and, when ndjsonPrefix is set,
// writes them as <prefix>overview.ndjson and <prefix>similar.ndjson for read_json, each line
// {"snapshot_month", "domain", "fetched_at", "body": <body as returned>}. It returns the
// total body bytes.
func storeGenerated(ctx context.Context, w *Warehouse, snapshot string, n int, ndjsonPrefix string) (int64, error) {
	gen := atlastest.NewGenerator(1, snapshot)
	domains := atlastest.Domains(n)
	var files [2]*bufio.Writer
	if ndjsonPrefix != "" {
		for i, name := range []string{"overview", "similar"} {
			f, err := os.Create(ndjsonPrefix + name + ".ndjson")
			if err != nil {
				return 0, err
			}
			defer f.Close()
			files[i] = bufio.NewWriterSize(f, 1<<20)
		}
	}
	fetched := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	var total int64
	const chunk = 1000
	for start := 0; start < len(domains); start += chunk {
		rb := array.NewRecordBuilder(w.mem, rawRecordTable.Schema)
		f := rb.Fields()
		for _, d := range domains[start:min(start+chunk, len(domains))] {
			for i, ep := range schema.DomainEndpoints {
				body := generate(gen, ep, d)
				total += int64(len(body))
				f[0].(*array.StringBuilder).Append(snapshot)
				f[1].(*array.StringBuilder).Append(d)
				f[2].(*array.StringBuilder).Append(string(ep))
				f[3].(*array.TimestampBuilder).Append(arrow.Timestamp(fetched.UnixMicro()))
				stored, encoding := compressBody(body)
				f[4].(*array.BinaryBuilder).Append(stored)
				f[5].(*array.StringBuilder).Append(encoding)
				f[6].AppendNull() // run_id: no run stored these
				if files[i] != nil {
					fmt.Fprintf(files[i], `{"snapshot_month":%q,"domain":%q,"fetched_at":%q,"body":`, snapshot, d, fetched.Format("2006-01-02 15:04:05"))
					files[i].Write(body)
					files[i].WriteString("}\n")
				}
			}
		}
		rec := rb.NewRecord()
		rb.Release()
		err := w.inTx(ctx, func(ctx context.Context) error { return w.insertRecord(ctx, rawRecordTable, rec) })
		rec.Release()
		if err != nil {
			return 0, err
		}
	}
	for _, f := range files {
		if f != nil {
			if err := f.Flush(); err != nil {
				return 0, err
			}
		}
	}
	return total, nil
}

// duckdbJSONLoad is DuckDB's own path: read_json of the NDJSON files, then INSERT … SELECT
// with UNNEST into every snapshot table, replacing snapshot's rows, in one transaction.
func duckdbJSONLoad(ctx context.Context, w *Warehouse, snapshot, ndjsonPrefix string) error {
	// read_json materializes both files: under Rebuild's BulkMemoryLimit (160 MB) it runs out
	// of memory at 10,000 domains, so DuckDB's path gets the reader limit (the benchmark opens
	// with 8 GB) while ours stays under the bulk limit: the comparison favours DuckDB.
	restore, err := w.setMemoryLimit(ctx, w.opts.MemoryLimit)
	if err != nil {
		return err
	}
	defer restore()
	stmts := duckdbJSONStatements(snapshot, ndjsonPrefix)
	return w.inTx(ctx, func(ctx context.Context) error {
		for _, s := range stmts {
			if _, err := w.load.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
}

// duckdbJSONStatements returns duckdbJSONLoad's SQL, to run in one transaction (BenchmarkRebuild
// also runs it on a current DuckDB through node).
func duckdbJSONStatements(snapshot, ndjsonPrefix string) []string {
	read := func(name string) string {
		return fmt.Sprintf(`CREATE TEMP TABLE %s AS SELECT * FROM read_json(%s, format = 'newline_delimited')`,
			name, sqlString(ndjsonPrefix+strings.TrimPrefix(name, "bench_")+".ndjson"))
	}
	stmts := []string{
		`DROP TABLE IF EXISTS bench_overview`, `DROP TABLE IF EXISTS bench_similar`,
		read("bench_overview"), read("bench_similar"),
	}
	for _, t := range flatten.SnapshotTables {
		stmts = append(stmts, fmt.Sprintf(`DELETE FROM %s WHERE snapshot_month = %s`, t.Name, sqlString(snapshot)))
	}
	channels := []string{}
	for _, c := range (&schema.SourcesShare{}).Channels() {
		channels = append(channels, fmt.Sprintf(`{'channel': '%s', 'share': body.traffic.sources_share.%s::DOUBLE}`, c.Channel, c.Channel))
	}
	stmts = append(stmts,
		`INSERT INTO sites SELECT o.snapshot_month, o.domain, o.body.meta.request.url, o.body.meta.snapshot_date::DATE,
			o.body.meta.data_coverage, o.body.website.title, o.body.website.description, o.body.website.category.slug,
			o.body.website.category.name, o.body.website.images.favicon_url, o.body.website.images.screenshot_desktop_url,
			o.body.website.images.screenshot_mobile_url, o.body.website.flags.is_small_site,
			o.body.website.flags.is_from_google_analytics, o.body.traffic.is_data_from_ga, o.body.rankings.global.rank,
			o.body.rankings.country.country_code, o.body.rankings.country.rank, o.body.rankings.category.rank,
			o.body.traffic.engagement.pages_per_visit, o.body.traffic.engagement.bounce_rate,
			o.body.traffic.engagement.average_visit_duration_seconds, o.body.traffic.period,
			o.body.ai_referrals.total_visits, o.body.ai_referrals.global_traffic_share, s.body.traffic.total_visits,
			o.fetched_at::TIMESTAMP
		FROM bench_overview o JOIN bench_similar s USING (snapshot_month, domain)`,
		`INSERT INTO traffic_history SELECT snapshot_month, domain, h.month::DATE, h.visits
		FROM (SELECT snapshot_month, domain, unnest(body.traffic.history) AS h FROM bench_overview)`,
		`INSERT INTO sources_share SELECT snapshot_month, domain, c.channel, c.share
		FROM (SELECT snapshot_month, domain, unnest([`+strings.Join(channels, ", ")+`]) AS c
			FROM bench_overview WHERE body.traffic.sources_share IS NOT NULL)`,
		`INSERT INTO geography_share SELECT snapshot_month, domain, g.country_code, g.share
		FROM (SELECT snapshot_month, domain, unnest(body.traffic.geography_share) AS g FROM bench_overview)`,
		`INSERT INTO keywords SELECT snapshot_month, domain, position, k.keyword, k.search_volume, k.cpc_usd, k.estimated_value_usd
		FROM (SELECT snapshot_month, domain, generate_subscripts(body.seo.top_keywords, 1) AS position,
			unnest(body.seo.top_keywords) AS k FROM bench_overview)`,
		`INSERT INTO ai_platforms SELECT snapshot_month, domain, p.name, p.rank, p.share
		FROM (SELECT snapshot_month, domain, unnest(body.ai_referrals.platforms) AS p FROM bench_overview)`,
		`INSERT INTO ai_platform_history SELECT snapshot_month, domain, name, strptime(h.month, '%Y-%m')::DATE, h.share
		FROM (SELECT snapshot_month, domain, p.name AS name, unnest(p.history) AS h
			FROM (SELECT snapshot_month, domain, unnest(body.ai_referrals.platforms) AS p FROM bench_overview))`,
		`INSERT INTO ai_prompts SELECT snapshot_month, domain, position, prompt
		FROM (SELECT snapshot_month, domain, generate_subscripts(body.ai_referrals.top_prompts, 1) AS position,
			unnest(body.ai_referrals.top_prompts) AS prompt FROM bench_overview)`,
		`INSERT INTO similar_sites SELECT snapshot_month, domain, position, x.domain, x.title, x.description,
			x.rankings.global.rank, x.rankings.country.country_code, x.rankings.country.country_name,
			x.rankings.country.rank, x.rankings.category.category_slug, x.rankings.category.rank,
			x.traffic.total_visits, x.images.favicon_url, x.images.screenshot_desktop_url, x.images.screenshot_mobile_url
		FROM (SELECT snapshot_month, domain, generate_subscripts(body.similar_sites, 1) AS position,
			unnest(body.similar_sites) AS x FROM bench_similar)`,
		`INSERT INTO site_tags SELECT DISTINCT snapshot_month, domain, tag
		FROM (SELECT snapshot_month, domain, unnest(body.website.tags) AS tag FROM bench_similar)`,
		`DROP TABLE bench_overview`, `DROP TABLE bench_similar`,
	)
	return stmts
}

// generate returns the generated body of endpoint for domain.
func generate(gen *atlastest.Generator, ep schema.Endpoint, domain string) []byte {
	if ep == schema.EndpointOverview {
		return gen.OverviewBody(domain)
	}
	return gen.SimilarBody(domain)
}

// engineFloor times what any load path pays on the linked-in DuckDB, whatever it decodes
// with: the snapshot's rows, already in DuckDB's own format (in-memory temp tables, copied
// before the clock starts), replace the snapshot in one transaction — DELETE, INSERT …
// SELECT per table, COMMIT — under the memory limit, insertion-order setting and thread
// count (rebuildThreads) Rebuild uses. It is the part of a rebuild's time that no faster decoding can remove.
func engineFloor(ctx context.Context, w *Warehouse, snapshot string) (time.Duration, error) {
	conn, err := w.DB().Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	exec := func(q string, args ...any) error {
		_, err := conn.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}
	for _, t := range flatten.SnapshotTables {
		if err := exec(`CREATE OR REPLACE TEMP TABLE floor_`+t.Name+` AS SELECT * FROM `+t.Name+` WHERE snapshot_month = ?`, snapshot); err != nil {
			return 0, err
		}
	}
	defer func() {
		for _, t := range flatten.SnapshotTables {
			_ = exec(`DROP TABLE IF EXISTS floor_` + t.Name)
		}
	}()
	restore, err := w.setMemoryLimit(ctx, w.opts.BulkMemoryLimit)
	if err != nil {
		return 0, err
	}
	defer restore()
	restoreThreads, err := w.useRebuildThreads(ctx)
	if err != nil {
		return 0, err
	}
	defer restoreThreads()
	stmts := []string{`SET preserve_insertion_order = false`, `BEGIN TRANSACTION`}
	for _, t := range flatten.SnapshotTables {
		stmts = append(stmts, `DELETE FROM `+t.Name+` WHERE snapshot_month = `+sqlString(snapshot),
			`INSERT INTO `+t.Name+` SELECT * FROM floor_`+t.Name)
	}
	stmts = append(stmts, `COMMIT`)
	start := time.Now()
	for _, q := range stmts {
		if err := exec(q); err != nil {
			return 0, err
		}
	}
	elapsed := time.Since(start)
	return elapsed, exec(`RESET preserve_insertion_order`)
}
