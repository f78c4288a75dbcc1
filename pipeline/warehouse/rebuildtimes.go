package warehouse

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// RebuildTimes is where one snapshot's rebuild spent its wall-clock time, phase by phase
// (docs/warehouse-internals.md, "Where a rebuild's time goes"). Insert, Wait and Decode overlap:
// the workers decode while the inserter inserts, so only Clear + Insert + Wait + Commit +
// Checks + Export add up to the whole.
type RebuildTimes struct {
	Clear  time.Duration // the list of stored domains and the sums of the stored rows (rebuildDiff)
	Insert time.Duration // INSERT … SELECT from the Arrow views (the inserting goroutine)
	Wait   time.Duration // the inserter waiting for decoded records
	Read   time.Duration // the reader fetching pages of stored bodies (on its own connection)
	Decode time.Duration // decompressing, decoding and flattening, summed over the workers
	Commit time.Duration // COMMIT, with the checkpoint it triggers
	Checks time.Duration // the quality checks (the snapshot tables export beside them)
	Export time.Duration // the Parquet export beyond the checks

	Threads int // DuckDB's threads while inserting, committing, checking and exporting (rebuildThreads), read after the export

	// TablesRewritten is the number of snapshot tables whose rows differed from the stored
	// bodies' and were rewritten (rebuildDiff); the others were left as they were.
	TablesRewritten int
}

// Total is the rebuild's wall-clock time: the phases that do not overlap.
func (t RebuildTimes) Total() time.Duration {
	return t.Clear + t.Insert + t.Wait + t.Commit + t.Checks + t.Export
}

// LogValue lists the phases in milliseconds, for the log line of each rebuilt snapshot.
func (t RebuildTimes) LogValue() slog.Value {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return slog.GroupValue(
		slog.Int64("clear_ms", ms(t.Clear)), slog.Int64("insert_ms", ms(t.Insert)),
		slog.Int64("wait_ms", ms(t.Wait)), slog.Int64("read_ms", ms(t.Read)), slog.Int64("decode_ms", ms(t.Decode)),
		slog.Int64("commit_ms", ms(t.Commit)), slog.Int64("checks_ms", ms(t.Checks)),
		slog.Int64("export_ms", ms(t.Export)), slog.Int("duckdb_threads", t.Threads),
		slog.Int("tables_rewritten", t.TablesRewritten))
}

// stageClock sums the time goroutines of one stage spent working.
type stageClock struct{ total atomic.Int64 }

func (c *stageClock) add(d time.Duration) { c.total.Add(int64(d)) }

func (c *stageClock) sum() time.Duration { return time.Duration(c.total.Load()) }
