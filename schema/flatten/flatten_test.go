package flatten

import (
	"sitewatch/schema"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodePair(t *testing.T, name string) (*schema.SiteOverview, *schema.SiteSimilar) {
	t.Helper()
	ov, err := schema.DecodeOverview(readFixture(t, "overview_"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := schema.DecodeSimilar(readFixture(t, "similar_"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return ov, sim
}

var fetched = time.Date(2026, 11, 2, 6, 0, 0, 123456000, time.UTC)

// TestBatchRowCounts checks the number of rows each fixture gives in each table; the exact
// values are checked by the warehouse golden test.
func TestBatchRowCounts(t *testing.T) {
	tests := []struct {
		name string
		want map[string]int64
	}{
		{"full", map[string]int64{
			TableSites: 1, TableTrafficHistory: 3, TableSourcesShare: 10, TableGeographyShare: 3,
			TableKeywords: 3, TableAIPlatforms: 3, TableAIPlatformHistory: 2, TableAIPrompts: 3,
			TableSimilarSites: 3, TableSiteTags: 3}},
		{"missing", map[string]int64{TableSites: 1}},
		{"objnull", map[string]int64{TableSites: 1}},
		{"nulls", map[string]int64{TableSites: 1, TableSourcesShare: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ov, sim := decodePair(t, tt.name)
			b := NewBatch(mem)
			defer b.Release()
			if err := b.Add("2026-11", "d.example", fetched, ov, sim); err != nil {
				t.Fatal(err)
			}
			var wantRows int64
			for _, n := range tt.want {
				wantRows += n
			}
			if got := int64(b.Rows()); got != wantRows {
				t.Errorf("Rows() = %d, want %d", got, wantRows)
			}
			recs := b.NewRecords()
			for i, rec := range recs {
				name := SnapshotTables[i].Name
				if got, want := rec.NumRows(), tt.want[name]; got != want {
					t.Errorf("%s: %d rows, want %d", name, got, want)
				}
				if !rec.Schema().Equal(SnapshotTables[i].Schema) {
					t.Errorf("%s: record schema differs from SnapshotTables", name)
				}
				rec.Release()
			}
			if b.Rows() != 0 || b.Domains() != 0 {
				t.Errorf("after NewRecords: Rows %d, Domains %d, want 0", b.Rows(), b.Domains())
			}
		})
	}
}

func TestBatchMalformedDates(t *testing.T) {
	day := func(s string) *string { return &s }
	tests := []struct {
		name     string
		ov       *schema.SiteOverview
		wantPath string
	}{
		{"SnapshotDate", &schema.SiteOverview{Meta: schema.OverviewMeta{SnapshotDate: day("2026/11/01")}}, "meta.snapshot_date"},
		{"EmptySnapshotDate", &schema.SiteOverview{Meta: schema.OverviewMeta{SnapshotDate: day("")}}, "meta.snapshot_date"},
		{"HistoryMonth", &schema.SiteOverview{Traffic: &schema.Traffic{History: []schema.TrafficPoint{{Month: "2026-08-01"}, {Month: "2026-13-01"}}}}, "traffic.history[1].month"},
		{"HistoryMissingMonth", &schema.SiteOverview{Traffic: &schema.Traffic{History: []schema.TrafficPoint{{}}}}, "traffic.history[0].month"},
		{"PlatformMonth", &schema.SiteOverview{AIReferrals: &schema.AIReferrals{Platforms: []schema.AIPlatform{
			{Name: "a", History: []schema.AIShareMonth{{Month: "2026-09"}}},
			{Name: "b", History: []schema.AIShareMonth{{Month: "2026-09"}, {Month: "2026-09-01"}}},
		}}}, "ai_referrals.platforms[1].history[1].month"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := NewBatch(mem)
			defer b.Release()
			err := b.Add("2026-11", "bad.example", fetched, tt.ov, nil)
			var fe *FlattenError
			if !errors.As(err, &fe) {
				t.Fatalf("Add error = %v, want a *FlattenError", err)
			}
			if fe.Path != tt.wantPath || fe.Domain != "bad.example" {
				t.Errorf("FlattenError path %q domain %q, want %q bad.example", fe.Path, fe.Domain, tt.wantPath)
			}
			if b.Rows() != 0 || b.Domains() != 0 {
				t.Errorf("a refused domain added rows: Rows %d Domains %d", b.Rows(), b.Domains())
			}
			// The batch stays usable and consistent (every column the same length).
			ov, sim := decodePair(t, "full")
			if err := b.Add("2026-11", "ok.example", fetched, ov, sim); err != nil {
				t.Fatal(err)
			}
			for _, rec := range b.NewRecords() {
				if err := validateRecord(rec.NumRows(), rec.Columns()); err != nil {
					t.Error(err)
				}
				rec.Release()
			}
		})
	}
}

func TestBatchFixtureWithBadDate(t *testing.T) {
	ov, err := schema.DecodeOverview(readFixture(t, "overview_baddate.json"))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch(nil)
	defer b.Release()
	err = b.Add("2026-11", "bad.example", fetched, ov, nil)
	if got, want := err.Error(), `flatten bad.example: traffic.history[1].month is "2026-13-01", not a YYYY-MM-DD date: the response is malformed, so this domain is not loaded`; got != want {
		t.Errorf("error\n got %s\nwant %s", got, want)
	}
}

func TestCountriesRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cm, err := schema.DecodeCountries(readFixture(t, "countries.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := CountriesRecord(mem, cm)
	defer rec.Release()
	if got, want := rec.NumRows(), int64(4); got != want {
		t.Fatalf("rows %d, want %d", got, want)
	}
	if got, want := rec.Column(2).ValueStr(0), "004"; got != want {
		t.Errorf("numeric of Afghanistan %q, want %q (leading zeros kept)", got, want)
	}
}

// TestBatchReuseManyChunks checks that a reused batch gives consistent records chunk after
// chunk and frees everything.
func TestBatchReuseManyChunks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ov, sim := decodePair(t, "full")
	b := NewBatch(mem)
	defer b.Release()
	for chunk := range 5 {
		for range 10 + chunk {
			if err := b.Add("2026-11", "d.example", fetched, ov, sim); err != nil {
				t.Fatal(err)
			}
		}
		recs := b.NewRecords()
		if got, want := recs[0].NumRows(), int64(10+chunk); got != want {
			t.Errorf("chunk %d: %d sites rows, want %d", chunk, got, want)
		}
		for _, r := range recs {
			r.Release()
		}
	}
}

func validateRecord(rows int64, cols []arrow.Array) error {
	for i, c := range cols {
		if int64(c.Len()) != rows {
			return fmt.Errorf("column %d has %d values, record %d rows", i, c.Len(), rows)
		}
	}
	return nil
}

// TestDecodeFastEqualsStd checks that the fast decoders give the same values as the standard
// ones on every fixture, and the same errors on bad bodies.
func TestDecodeFastEqualsStd(t *testing.T) {
	for _, name := range []string{"full", "missing", "nulls", "objnull", "baddate"} {
		t.Run(name, func(t *testing.T) {
			body := readFixture(t, "overview_"+name+".json")
			want, err1 := schema.DecodeOverview(body)
			got, err2 := schema.DecodeOverviewFast(body)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("overview: fast %+v, std %+v", got, want)
			}
			if name == "baddate" {
				return
			}
			body = readFixture(t, "similar_"+name+".json")
			wantS, err1 := schema.DecodeSimilar(body)
			gotS, err2 := schema.DecodeSimilarFast(body)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !reflect.DeepEqual(gotS, wantS) {
				t.Errorf("similar: fast %+v, std %+v", gotS, wantS)
			}
		})
	}
	for _, body := range []string{`{"success": true, "sourceSite": "x"}`, `{"status": "error"}`, `[1]`, `{"status": "success", "traffic": 5}`} {
		_, want := schema.DecodeOverview([]byte(body))
		_, got := schema.DecodeOverviewFast([]byte(body))
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: fast error %v, std error %v", body, got, want)
		}
	}
}
