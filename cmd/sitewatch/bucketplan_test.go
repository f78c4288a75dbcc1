package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/s3test"
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

// countingBucket counts the requests sent to gw's bucket through the returned endpoint, a
// manifest's read apart ("GET manifest").
func countingBucket(t *testing.T, gw *s3test.Server) (string, *s3test.Requests) {
	t.Helper()
	c := s3test.CountRequests(t, gw.Endpoint, func(r *http.Request) string {
		if r.Method == http.MethodGet && !r.URL.Query().Has("list-type") && strings.Contains(r.URL.Path, "/_manifests/") {
			return "GET manifest"
		}
		return ""
	})
	return c.URL, c
}

// treeOf lists every file under dir with its size and modification time.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		out[p] = fmt.Sprintf("%d %s", info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// planRow is the value of a row of the dry run's plan ("  calls   6").
func planRow(t *testing.T, out, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(label) + `\s+(.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the plan has no row %q:\n%s", label, out)
	}
	return m[1]
}

// TestDryRunCountsWhatTheBucketHolds (issue 32): machine B's warehouse holds only an older
// month; the bucket holds machine A's restore copy of the month the API serves now. B's
// `run --dry-run` plans only the calls the bucket lacks, says the bucket holds A's answers
// and that a run pulls them first, and writes nothing (no request that writes the bucket,
// no file of B's changed); `check` estimates the same; B's run then pays exactly that.
func TestDryRunCountsWhatTheBucketHolds(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6) // 13 calls
	_, held := incompleteInBucket(t, gw.Endpoint, domains)
	missing := 2*len(domains) + 1 - held

	older := "2026-09"
	b := newHarness(t, atlastest.Options{Month: older}, domains, "")
	if code := b.run("run"); code != ExitOK { // its own month, before it shared the bucket
		t.Fatalf("B's run of %s: exit %d\n%s%s", older, code, b.stdout, b.stderr)
	}
	endpoint, requests := countingBucket(t, gw)
	withPublish(t, b, endpoint, "")
	if err := b.srv.SetMonth(testMonth); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, filepath.Join(b.dir, "data"))
	requests.Take()
	if code := b.run("run", "--dry-run"); code != ExitOK {
		t.Fatalf("dry run: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	out := b.stdout.String()
	if got := planRow(t, out, "calls"); got != strconv.Itoa(missing) {
		t.Errorf("the dry run plans %s calls, want the %d the bucket lacks:\n%s", got, missing, out)
	}
	if want := fmt.Sprintf("the bucket holds %d answers this warehouse lacks (%s, s3://team-bucket/team); a run pulls them first", held, testMonth); !strings.Contains(out, want) {
		t.Errorf("the dry run does not say %q:\n%s", want, out)
	}
	_, seen := requests.Take()
	for kind, n := range seen {
		if kind != "LIST" && !strings.HasPrefix(kind, "GET") {
			t.Errorf("the dry run sent %d %s requests to the bucket, want reads only", n, kind)
		}
	}
	if after := treeOf(t, filepath.Join(b.dir, "data")); !maps.Equal(before, after) {
		t.Errorf("the dry run changed B's files:\nbefore %v\nafter  %v", before, after)
	}
	charged := b.srv.Stats().Charged

	if code := b.run("check"); code != ExitOK || !strings.Contains(b.stdout.String(), fmt.Sprintf("holds %d answers this warehouse lacks", held)) ||
		!strings.Contains(planRowOr(b.stdout.String(), "next run needs"), strconv.Itoa(missing)) {
		t.Errorf("check does not estimate the same %d calls: exit %d\n%s%s", missing, code, b.stdout, b.stderr)
	}
	if code := b.run("run"); code != ExitOK {
		t.Fatalf("B's run: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	if paid := b.srv.Stats().Charged - charged; paid != int64(missing) {
		t.Errorf("B's run paid %d credits, its dry run planned %d", paid, missing)
	}
}

// planRowOr is planRow's value, or "" when out has no such row.
func planRowOr(out, label string) string {
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(label) + `\s+(.*)$`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// syncState reads the bucket sync state of h's Parquet tree.
func syncState(t *testing.T, h *harness) publish.SyncState {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(h.dir, "data", "parquet", publish.SyncStateFile))
	if err != nil {
		t.Errorf("no bucket sync state: %v", err)
		return publish.SyncState{}
	}
	var st publish.SyncState
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRunAfterRestoreSyncsForOneListing (issue 32): `restore` records the manifest versions
// it took (publish.SyncStateFile), as a sync would, so the run right after it reads no
// manifest: its sync costs one listing. The bucket holds a complete month (machine C's) and
// the restore copy of an incomplete one (machine A's); machine E, which syncs instead of
// restoring, records the same versions.
func TestRunAfterRestoreSyncsForOneListing(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(4)
	older := "2026-09"
	publishedMachine(t, gw, atlastest.Options{Month: older}, domains, "")
	incompleteInBucket(t, gw.Endpoint, domains)

	// D and E run `--snapshot` of the older month while the API serves the newer: each run
	// syncs, then stops after its probe (exit 5) and publishes nothing, so every manifest
	// read is its sync's.
	d := newHarness(t, atlastest.Options{}, domains, "")
	endpoint, requests := countingBucket(t, gw)
	withPublish(t, d, endpoint, "")
	if code := d.run("restore"); code != ExitOK {
		t.Fatalf("D's restore: exit %d\n%s%s", code, d.stdout, d.stderr)
	}
	restored := syncState(t, d)
	if len(restored.Manifests) != 2 {
		t.Errorf("the restore recorded %d manifest versions, want C's month and A's restore copy: %+v", len(restored.Manifests), restored)
	}
	requests.Take()
	if code := d.run("run", "--snapshot", older); code != ExitWrongMonth {
		t.Fatalf("D's run after the restore: exit %d, want %d\n%s%s", code, ExitWrongMonth, d.stdout, d.stderr)
	}
	if _, seen := requests.Take(); seen["GET manifest"] != 0 || seen["LIST"] != 1 {
		t.Errorf("D's run after the restore sent %v to the bucket, want one LIST and no manifest read", seen)
	}

	e := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, e, gw.Endpoint, "")
	if code := e.run("run", "--snapshot", older); code != ExitWrongMonth {
		t.Fatalf("E's run: exit %d, want %d\n%s%s", code, ExitWrongMonth, e.stdout, e.stderr)
	}
	// The manifests: the answer log grew since the restore (the probes of D's and E's runs).
	if synced := syncState(t, e); !reflect.DeepEqual(synced.Manifests, restored.Manifests) {
		t.Errorf("the restore recorded\n%+v\na sync records\n%+v", restored, synced)
	}
}
