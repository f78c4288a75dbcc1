package report

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The report's time budgets at 5,000 domains (issues 37 and 45), held here rather than in
// TestLayoutBudgets: a wall-clock budget is a measure, and `make bench` prints it with its
// ratio to the budget, median of benchRounds, on whatever machine runs it.
const (
	writeBudget5000 = 10 * time.Second       // report.Write
	loadBudget5000  = 5 * time.Second        // the load event in Chromium at 1400 px
	sortBudget5000  = 300 * time.Millisecond // one sort of the All domains table at 1400 px
	benchRounds     = 3
)

// BenchmarkReport5000 writes the report of 5,000 simulated domains, opens it in headless
// Chromium at 1400 px and sorts its All domains table, benchRounds times each, and reports the
// medians against the budgets (`*-ratio` ≤ 1 meets one). The first sort of a page reads the
// sort keys and is reported on its own (`first-sort-ms`); the budget holds every sort.
func BenchmarkReport5000(b *testing.B) {
	chromiumPath(b)
	db := simWarehouse(b, 5000)
	b.ResetTimer()
	for range b.N {
		var writes, loads, firsts, sorts []time.Duration
		var html string
		for range benchRounds {
			start := time.Now()
			var buf bytes.Buffer
			if err := Write(context.Background(), db, simMonths[1], &buf); err != nil {
				b.Fatal(err)
			}
			writes = append(writes, time.Since(start))
			html = buf.String()
		}
		for range benchRounds {
			loads = append(loads, loadEvent(b, html, 1400))
			r := probeTable(b, html, 1400)
			if len(r.sorts) == 0 || r.problems != "" {
				b.Fatalf("the table probe sorted %d times, problems: %s", len(r.sorts), r.problems)
			}
			firsts = append(firsts, r.sorts[0])
			sorts = append(sorts, r.sorts...)
		}
		report := func(unit string, d []time.Duration, budget time.Duration) {
			m := median(d)
			b.ReportMetric(float64(m)/float64(time.Millisecond), unit+"-ms")
			if budget > 0 {
				b.ReportMetric(float64(m)/float64(budget), unit+"-ratio")
			}
		}
		report("write", writes, writeBudget5000)
		report("load", loads, loadBudget5000)
		report("sort", sorts, sortBudget5000)
		report("first-sort", firsts, 0)
		b.ReportMetric(float64(slices.Max(sorts))/float64(time.Millisecond), "slowest-sort-ms")
		b.Logf("5,000 domains at 1400 px: writes %v, load events %v, sorts %v", writes, loads, sorts)
	}
}

// loadEvent opens html with the budget probe at width and returns when its load event fired.
func loadEvent(tb testing.TB, html string, width int) time.Duration {
	tb.Helper()
	_, m := runBudgetProbe(tb, html, width, "")
	ms, _ := strconv.Atoi(m[4])
	return time.Duration(ms) * time.Millisecond
}

// median is the middle of d (the upper middle of an even count).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
