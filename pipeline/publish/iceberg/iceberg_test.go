package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"sitewatch/pipeline/publish/publishtest"
)

// TestPublishMonths publishes two months into the SQL catalog on PostgreSQL and the S3
// gateway, and checks with the independent reader (icebird) that every table's current
// snapshot and an earlier one hold the warehouse's rows; then the idempotence, crash,
// schema-evolution and expiry rules.
func TestPublishMonths(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, the S3 gateway and node (about 20 s)")
	}
	ctx := context.Background()
	f := publishtest.NewFixture(t)
	e := newEnv(t)
	p := e.publisher(t, 3)

	t.Run("WrongPasswordNamesNoSecret", func(t *testing.T) {
		wrong := "not-the-password-4711"
		_, err := New(ctx, e.config(3), Options{Getenv: func(string) string { return wrong }})
		if err == nil || strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "SITEWATCH_CATALOG_PASSWORD") {
			t.Fatalf("New with a wrong password: %v; want an error naming SITEWATCH_CATALOG_PASSWORD, not the password", err)
		}
	})

	resA, err := p.Month(ctx, f.Parquet(), monthA)
	if err != nil {
		t.Fatal(err)
	}
	if got := resA.Tables[len(resA.Tables)-1].Table; got != runsTable {
		t.Errorf("last table committed = %s, want runs (a month is complete for readers once its runs row is there)", got)
	}
	if resA.Commits() != len(resA.Tables) {
		t.Errorf("first publish committed %d of %d tables", resA.Commits(), len(resA.Tables))
	}
	firstMeta := metadataFiles(t, p, resA)

	t.Run("UnchangedMonthMakesNoCommit", func(t *testing.T) {
		again, err := p.Month(ctx, f.Parquet(), monthA)
		if err != nil {
			t.Fatal(err)
		}
		if again.Commits() != 0 {
			t.Errorf("republishing an unchanged month made %d commits, want 0", again.Commits())
		}
		if got := metadataFiles(t, p, again); !maps.Equal(got, firstMeta) {
			t.Errorf("metadata changed without a commit: %v, was %v", got, firstMeta)
		}
	})

	t.Run("KilledBeforeCommit", func(t *testing.T) {
		// A publish of month B killed after writing the data files of sites and before its
		// commit: the files are in the bucket, the table is at its previous snapshot.
		tbl, err := p.Load(ctx, "sites")
		if err != nil {
			t.Fatal(err)
		}
		srcs, err := monthSources(f.Parquet(), monthB)
		if err != nil {
			t.Fatal(err)
		}
		src := sourceOf(t, srcs, "sites")
		rdr, _, err := src.read(ctx, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		txn := tbl.NewTransaction()
		if err := txn.Overwrite(ctx, rdr, nil); err != nil {
			t.Fatal(err)
		}
		orphans := unreferenced(t, e, p, "sites")
		if len(orphans) == 0 {
			t.Fatal("the uncommitted overwrite left no data file in the bucket; the test does not test")
		}
		if now, _ := p.Load(ctx, "sites"); currentSnapshot(now) != currentSnapshot(tbl) {
			t.Fatal("an uncommitted transaction changed the table")
		}
	})

	resB, err := p.Month(ctx, f.Parquet(), monthB)
	if err != nil {
		t.Fatal(err)
	}
	if resB.Commits() != len(resB.Tables)-1 { // countries is unchanged
		t.Errorf("publish of %s committed %d of %d tables, want all but countries", monthB, resB.Commits(), len(resB.Tables))
	}
	t.Run("NextPublishRemovesOrphans", func(t *testing.T) {
		if got := unreferenced(t, e, p, "sites"); len(got) != 0 {
			t.Errorf("files no snapshot references after the next publish: %v", got)
		}
	})

	t.Run("IcebirdReadsEveryTable", func(t *testing.T) {
		var snaps [][2]string
		var names []string
		wants := map[string]map[string]int{}
		for _, tr := range resB.Tables {
			tbl, err := p.Load(ctx, tr.Table)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Table != "countries" {
				wants[tr.Table] = warehouseCounts(t, f, tr.Table)
				if len(wants[tr.Table]) == 0 { // icebird refuses a snapshot without data files
					if n := tbl.CurrentSnapshot().Summary.Properties["total-records"]; n != "0" {
						t.Errorf("%s: the warehouse has no rows, the snapshot has %s", tr.Table, n)
					}
					continue
				}
			}
			snaps = append(snaps, [2]string{tbl.Location(), tbl.MetadataLocation()})
			names = append(names, tr.Table)
		}
		for i, rows := range e.icebirdAll(t, snaps) {
			if names[i] == "countries" {
				if len(rows) == 0 {
					t.Errorf("countries: icebird read no rows")
				}
				continue
			}
			if got := countByMonth(rows); !maps.Equal(got, wants[names[i]]) {
				t.Errorf("%s: icebird rows by month %v, warehouse %v", names[i], got, wants[names[i]])
			}
		}
	})

	t.Run("IcebirdReadsAnEarlierSnapshot", func(t *testing.T) {
		tbl, err := p.Load(ctx, "traffic_history")
		if err != nil {
			t.Fatal(err)
		}
		rows := e.icebird(t, tbl.Location(), firstMeta["traffic_history"])
		want := warehouseCounts(t, f, "traffic_history")
		delete(want, monthB)
		if got := countByMonth(rows); !maps.Equal(got, want) {
			t.Errorf("traffic_history as of the first publish: rows by month %v, want %v", got, want)
		}
	})

	t.Run("NewColumnBecomesANewField", func(t *testing.T) {
		before, err := p.Load(ctx, "sites")
		if err != nil {
			t.Fatal(err)
		}
		addColumn(t, filepath.Join(f.Parquet(), "sites", monthColumn+"="+monthB), "ranking_note", "'added'")
		res, err := p.Month(ctx, f.Parquet(), monthB)
		if err != nil {
			t.Fatal(err)
		}
		if res.Commits() != 1 {
			t.Errorf("publish after a new column in sites made %d commits, want 1", res.Commits())
		}
		tbl, err := p.Load(ctx, "sites")
		if err != nil {
			t.Fatal(err)
		}
		field, ok := tbl.Schema().FindFieldByName("ranking_note")
		if !ok || field.ID <= before.Schema().HighestFieldID() {
			t.Fatalf("ranking_note: field %+v (found %v), want a new ID above %d", field, ok, before.Schema().HighestFieldID())
		}
		for _, r := range e.icebird(t, tbl.Location(), tbl.MetadataLocation()) {
			want := map[string]any{monthA: nil, monthB: "added"}[r[monthColumn].(string)]
			if r["ranking_note"] != want {
				t.Fatalf("row of %v: ranking_note = %v, want %v (old files read the new field as NULL)", r[monthColumn], r["ranking_note"], want)
			}
		}
	})

	t.Run("SnapshotsBeyondKeepExpire", func(t *testing.T) {
		tbl, err := p.Load(ctx, "sites")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n > 3 {
			t.Errorf("sites keeps %d snapshots, want at most keep_snapshots = 3", n)
		}
		if got := unreferenced(t, e, p, "sites"); len(got) != 0 {
			t.Errorf("files of expired snapshots left in the bucket: %v", got)
		}
	})
}

// metadataFiles maps each table of res to its current metadata file.
func metadataFiles(t *testing.T, p *Publisher, res Result) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tr := range res.Tables {
		tbl, err := p.Load(context.Background(), tr.Table)
		if err != nil {
			t.Fatal(err)
		}
		out[tr.Table] = tbl.MetadataLocation()
	}
	return out
}

func sourceOf(t *testing.T, srcs []source, name string) source {
	t.Helper()
	for _, s := range srcs {
		if s.table == name {
			return s
		}
	}
	t.Fatalf("no table %s in the month", name)
	return source{}
}

// unreferenced lists the data files of table in the bucket that no snapshot of the table
// references.
func unreferenced(t *testing.T, e *env, p *Publisher, name string) []string {
	t.Helper()
	tbl, err := p.Load(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	referenced := referencedFiles(t, tbl)
	prefix := strings.TrimPrefix(tbl.Location(), "s3://"+e.bucket+"/") + "/data/"
	var out []string
	for _, k := range e.objects(t, prefix) {
		if !referenced["s3://"+e.bucket+"/"+k] {
			out = append(out, k)
		}
	}
	return out
}

func referencedFiles(t *testing.T, tbl *table.Table) map[string]bool {
	t.Helper()
	ctx := context.Background()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			for en, err := range m.Entries(fs, false) {
				if err != nil {
					t.Fatal(err)
				}
				out[en.DataFile().FilePath()] = true
			}
		}
	}
	return out
}

// addColumn rewrites the Parquet files of dir with one more column (what a migration that adds
// a column does to the next export).
func addColumn(t *testing.T, dir, name, value string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Parquet file in %s: %v", dir, err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, file := range files {
		tmp := file + ".tmp"
		q := fmt.Sprintf(`COPY (SELECT *, %s AS %s FROM read_parquet('%s', hive_partitioning = false)) TO '%s' (FORMAT PARQUET)`, value, name, file, tmp)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
}
