package main

import (
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// incompleteInBucket is machine A of the tests below: with 7 credits it stops for credits
// mid-month and saves the restore copy of what it paid for in the shared bucket. It returns
// the answers of the month A stored (what the bucket holds).
func incompleteInBucket(t *testing.T, endpoint string, domains []string) (*harness, int) {
	t.Helper()
	a := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 7}}, domains, "")
	withPublish(t, a, endpoint, "")
	if code := a.run("run"); code != ExitCredits || !strings.Contains(a.stdout.String(), "restore copy of the incomplete "+testMonth) {
		t.Fatalf("A run: exit %d, want %d saving the restore copy\n%s%s", code, ExitCredits, a.stdout, a.stderr)
	}
	var held int
	withDB(t, a, func(db *sql.DB) {
		held = count(t, db, `SELECT count(*) FROM raw_responses WHERE snapshot_month = ?`, testMonth)
	})
	if held == 0 || held >= 2*len(domains)+1 {
		t.Fatalf("A stored %d answers of %s, want some but not all", held, testMonth)
	}
	return a, held
}

// plannedShares reads the "credit sources planned" log line of a run: each source's calls.
func plannedShares(t *testing.T, log string) map[string]int {
	t.Helper()
	i := strings.Index(log, `msg="credit sources planned"`)
	if i < 0 {
		t.Fatalf("the run logged no plan of its credit sources:\n%s", tail(log, 3000))
	}
	line, _, _ := strings.Cut(log[i:], "\n")
	shares := map[string]int{}
	for _, m := range regexp.MustCompile(`(\w+) pays ([\d,]+)`).FindAllStringSubmatch(line, -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		shares[m[1]] = n
	}
	if strings.Count(log, `msg="credit sources planned"`) != 1 {
		t.Errorf("the run logged its plan more than once:\n%s", tail(log, 3000))
	}
	return shares
}

// TestSourcesPlanCountsWhatTheBucketLacks (issue 32): machine A paid part of a month and
// saved its restore copy; machine B, with two credit sources, runs the month from the same
// bucket. Its plan line is made after the pull, so it names only the calls still missing (not
// the whole month), and it is what B then pays, source by source.
func TestSourcesPlanCountsWhatTheBucketLacks(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6) // 13 calls
	_, held := incompleteInBucket(t, gw.Endpoint, domains)
	missing := 2*len(domains) + 1 - held

	const quota = 4 // the listing pays its 4 first, the wallet the rest
	b := sourcesHarness(t, atlastest.Options{}, domains, quota, time.Now().Add(time.Hour))
	withPublish(t, b, gw.Endpoint, "")
	if code := b.run("run"); code != ExitOK {
		t.Fatalf("B run: exit %d\n%s%s", code, b.stdout, tail(b.stderr.String(), 3000))
	}
	shares := plannedShares(t, b.stderr.String())
	if want := map[string]int{"marketplace": quota, "direct": missing - quota}; shares["marketplace"] != want["marketplace"] || shares["direct"] != want["direct"] {
		t.Errorf("B's plan = %v, want %v: the %d calls the bucket lacks, not the month's %d", shares, want, missing, 2*len(domains)+1)
	}
	if got := b.srv.Stats().Charged; got != int64(missing) {
		t.Errorf("B paid %d credits, want the %d the bucket lacked", got, missing)
	}
	runOfB := completeRun(t, b, testMonth)
	withDB(t, b, func(db *sql.DB) {
		rows, err := db.Query(`SELECT source, sum(credits) FROM run_calls WHERE run_id = ? GROUP BY ALL`, runOfB)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				t.Fatal(err)
			}
			if n != shares[s] {
				t.Errorf("source %s paid %d, its planned share was %d", s, n, shares[s])
			}
		}
	})
}
