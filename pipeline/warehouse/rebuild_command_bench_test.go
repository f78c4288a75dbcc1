package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/schema/flatten"
)

// BenchmarkRebuildCommand is issue 44's whole-command measure, beside BenchmarkRebuild's
// in-process one: `sitewatch rebuild --snapshot 2026-11` of SITEWATCH_BENCH_DOMAINS (default
// 10,000) stored domains as a user runs it (process start, open, migrations, views, the
// rebuild, quality checks, Parquet export, close), against DuckDB's own path as a whole process
// too: node opening a database file with a current DuckDB (@duckdb/node-api), read_json +
// UNNEST of the same bodies into the same tables, and the same tables exported to Parquet
// (zstd, the export's row groups). Each of 3 rounds runs both, which goes first alternating,
// so machine load hits both alike; it reports the medians (command_s, duckdb_command_s) and
// their ratio, command_ratio_vs_current_duckdb (issue 44: ≤ 0.6), and the ratio of the two
// processes' CPU times (user + system), command_cpu_ratio_vs_current_duckdb, which a loaded
// machine (2 cores shared with other work) disturbs far less than the wall times; it logs the
// load average beside them. The rows each path leaves
// in the snapshot tables must be equal. The rebuild writes only tables whose rows differ
// (rebuildDiff), and these rounds find them equal; 3 more rounds then find every table
// differing from its first page on (command_rewriting_all_ratio_vs_current_duckdb, against the
// same DuckDB median). Without node, npm or the package it says why and skips (CI=true: fails).
//
//	go test -run '^$' -bench BenchmarkRebuildCommand -benchtime 1x -timeout 60m ./pipeline/warehouse/
func BenchmarkRebuildCommand(b *testing.B) {
	n := envInt("SITEWATCH_BENCH_DOMAINS", 10000)
	ctx := context.Background()
	dir := b.TempDir()
	w, err := Open(ctx, Options{DuckDBPath: filepath.Join(dir, "data", "w.duckdb"), ParquetDir: filepath.Join(dir, "data", "parquet")})
	if err != nil {
		b.Fatal(err)
	}
	prefix := filepath.Join(dir, "bench_")
	if _, err := storeGenerated(ctx, w, snap, n, prefix); err != nil {
		b.Fatal(err)
	}
	current, err := newNodeDuckDB(ctx, w, b.TempDir())
	if err := errors.Join(err, w.Close()); err != nil {
		if errors.Is(err, errNodeUnavailable) {
			testenv.Missing(b, "the whole-command ratio needs a current DuckDB: %v", err)
		}
		b.Fatal(err)
	}
	cmd := rebuildCommand(b, dir, n)
	export, err := parquetStatements(snap, filepath.Join(current.dir, "parquet"))
	if err != nil {
		b.Fatal(err)
	}
	load := append(duckdbJSONStatements(snap, prefix), export...)
	// One untimed run of each first: the tables then hold the month, so every timed run
	// replaces it, as `sitewatch rebuild` does; node's first run also creates its tables.
	runRebuildCommand(b, cmd)
	if _, err := current.load(ctx, load); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		var ours, duck, oursCPU, duckCPU []time.Duration
		var version string
		loadBefore := loadAverage()
		for round := range 3 {
			timeNode := func() {
				start := time.Now()
				run, err := current.load(ctx, load)
				if err != nil {
					b.Fatal(err)
				}
				duck, duckCPU, version = append(duck, time.Since(start)), append(duckCPU, run.CPU), run.Version
				if want := rebuiltRows(b, dir); run.Rows != want {
					b.Fatalf("DuckDB's path left %d rows in the snapshot tables, the command %d", run.Rows, want)
				}
			}
			if round%2 == 1 {
				timeNode()
			}
			wall, cpu := runRebuildCommand(b, cmd)
			ours, oursCPU = append(ours, wall), append(oursCPU, cpu)
			if round%2 == 0 {
				timeNode()
			}
		}
		mo, md := median(ours), median(duck)
		b.ReportMetric(mo.Seconds(), "command_s")
		b.ReportMetric(md.Seconds(), "duckdb_command_s")
		b.ReportMetric(mo.Seconds()/md.Seconds(), "command_ratio_vs_current_duckdb")
		co, cd := median(oursCPU), median(duckCPU)
		b.ReportMetric(co.Seconds()/cd.Seconds(), "command_cpu_ratio_vs_current_duckdb")
		lo, hi := ratioRange(ours, duck)
		b.Logf("%d domains: `sitewatch rebuild --snapshot %s` %v (%v), DuckDB %s (node, whole process) %v (%v): ratio of medians %.2f (%.2f–%.2f)",
			n, snap, mo.Round(time.Millisecond), roundAll(ours), version, md.Round(time.Millisecond), roundAll(duck), mo.Seconds()/md.Seconds(), lo, hi)
		lo, hi = ratioRange(oursCPU, duckCPU)
		b.Logf("CPU time (user + system of each whole process): the command %v (%v), node %v (%v): ratio of medians %.2f (%.2f–%.2f); load average %s before the rounds, %s after",
			co.Round(time.Millisecond), roundAll(oursCPU), cd.Round(time.Millisecond), roundAll(duckCPU), co.Seconds()/cd.Seconds(), lo, hi, loadBefore, loadAverage())
		rewritten, rewrittenCPU := timeRewritingEveryTable(b, dir, cmd)
		mr := median(rewritten)
		b.ReportMetric(mr.Seconds()/md.Seconds(), "command_rewriting_all_ratio_vs_current_duckdb")
		b.Logf("every table differing from its first page on (the lowest domain's rows deleted before each round): the command %v (%v), CPU %v: ratio of medians to DuckDB's above %.2f, CPU %.2f",
			mr.Round(time.Millisecond), roundAll(rewritten), median(rewrittenCPU).Round(time.Millisecond), mr.Seconds()/md.Seconds(), median(rewrittenCPU).Seconds()/cd.Seconds())
	}
}

// rewriteEveryTable deletes the lowest domain's rows of snap from every snapshot table, so the
// next rebuild finds each table differing from its first page on and rewrites it whole.
func rewriteEveryTable(b *testing.B, db *sql.DB) {
	b.Helper()
	for _, t := range flatten.SnapshotTables {
		if _, err := db.Exec(`DELETE FROM `+t.Name+` WHERE snapshot_month = ? AND domain = (SELECT min(domain) FROM `+t.Name+` WHERE snapshot_month = ?)`, snap, snap); err != nil {
			b.Fatal(err)
		}
	}
}

// timeRewritingEveryTable times 3 rebuilds that rewrite every snapshot table whole: before each
// (untimed) the lowest domain's rows are deleted from every table, so each table differs from
// its first page on and the rebuild deletes and inserts all its rows, as one that found every
// row changed (rebuildDiff's most costly case).
func timeRewritingEveryTable(b *testing.B, dir string, cmd []string) (wall, cpu []time.Duration) {
	b.Helper()
	for range 3 {
		w, err := Open(context.Background(), Options{DuckDBPath: filepath.Join(dir, "data", "w.duckdb")})
		if err != nil {
			b.Fatal(err)
		}
		rewriteEveryTable(b, w.DB())
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		wl, c := runRebuildCommand(b, cmd)
		wall, cpu = append(wall, wl), append(cpu, c)
	}
	return wall, cpu
}

// loadAverage is the machine's 1-, 5- and 15-minute load averages (/proc/loadavg), or "?"
// where there is no such file: the wall ratios mean little on a loaded machine.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// rebuildCommand builds sitewatch into dir and returns `sitewatch rebuild` of the month for a
// config there naming the n stored domains.
func rebuildCommand(b *testing.B, dir string, n int) []string {
	b.Helper()
	bin := filepath.Join(dir, "sitewatch")
	if out, err := exec.Command("go", "build", "-o", bin, "sitewatch/cmd/sitewatch").CombinedOutput(); err != nil {
		b.Fatalf("go build sitewatch: %v\n%s", err, out)
	}
	var cfg strings.Builder
	cfg.WriteString("api:\n  base_url: http://127.0.0.1:1\nwarehouse:\n  duckdb: data/w.duckdb\n  parquet: data/parquet\ndomains:\n")
	for _, d := range atlastest.Domains(n) {
		fmt.Fprintf(&cfg, "  - %s\n", d)
	}
	config := filepath.Join(dir, "domains.yaml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return []string{bin, "rebuild", "--config", config, "--snapshot", snap}
}

// runRebuildCommand runs the command to its end and returns its wall and CPU time. It logs the
// command's own phase times (its "rebuilt snapshot" line: insert, commit, checks, export, …);
// the rest of the wall time is the process, the open (migrations, views) and the close.
func runRebuildCommand(b *testing.B, cmd []string) (wall, cpu time.Duration) {
	b.Helper()
	start := time.Now()
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Dir = filepath.Dir(cmd[0])
	out, err := c.CombinedOutput()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "rebuilt snapshot") {
			b.Logf("command %v: %s", elapsed.Round(time.Millisecond), line)
		}
	}
	return elapsed, processCPU(c.ProcessState)
}

// rebuiltRows counts the snapshot tables' rows of the month the command rebuilt.
func rebuiltRows(b *testing.B, dir string) int {
	b.Helper()
	w, err := Open(context.Background(), Options{DuckDBPath: filepath.Join(dir, "data", "w.duckdb"), ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = w.Close() }() // read-only
	return totalRows(b, w)
}

// parquetStatements export each snapshot table's month as ExportParquet does (one zstd file
// per table and month, the month in the path), for DuckDB's own path; it creates the
// directories, which COPY does not.
func parquetStatements(snapshot, root string) ([]string, error) {
	var out []string
	for _, t := range flatten.SnapshotTables {
		dir := filepath.Join(root, t.Name, "snapshot_month="+snapshot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf(`COPY (SELECT * EXCLUDE (snapshot_month) FROM %s WHERE snapshot_month = %s) TO %s (FORMAT PARQUET, COMPRESSION zstd, ROW_GROUP_SIZE 16384)`,
			t.Name, sqlString(snapshot), sqlString(filepath.Join(dir, parquetFile))))
	}
	return out, nil
}
