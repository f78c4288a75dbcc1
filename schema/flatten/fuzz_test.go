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

// FuzzDecode feeds any bytes to DecodeOverview, DecodeSimilar and DecodeCountries (and their
// fast variants) and flattens whatever decodes: nothing panics, every error is a *DecodeError
// or a *FlattenError, the fast decoders agree with encoding/json on every body it accepts,
// the records are well-formed and no Arrow buffer leaks. Seeds: the fixtures in testdata/ and
// testdata/fuzz/FuzzDecode (atlastest generator bodies, v1 bodies, drifted and cut ones).
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"overview_full.json", "overview_missing.json", "overview_nulls.json", "overview_objnull.json",
		"overview_baddate.json", "similar_full.json", "similar_missing.json", "similar_nulls.json", "similar_objnull.json", "countries.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"success": true, "sourceSite": "a.com"}`))
	f.Add([]byte(`{"status": "error"}`))
	f.Add([]byte(`{"status": "success", "traffic": {"history": "unavailable"}}`))
	f.Add([]byte(`<!DOCTYPE html><html></html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)

		ov, errOv := schema.DecodeOverview(body)
		checkDecodeErr(t, "DecodeOverview", errOv)
		sim, errSim := schema.DecodeSimilar(body)
		checkDecodeErr(t, "DecodeSimilar", errSim)
		cm, errCm := schema.DecodeCountries(body)
		checkDecodeErr(t, "DecodeCountries", errCm)

		// The warehouse loads with the fast decoders what the client validated with the
		// standard ones: on every body the standard decoder accepts, they must agree.
		if errOv == nil {
			fast, err := schema.DecodeOverviewFast(body)
			if err != nil {
				t.Fatalf("DecodeOverview accepts the body, DecodeOverviewFast does not: %v", err)
			}
			if !reflect.DeepEqual(fast, ov) {
				t.Fatalf("DecodeOverviewFast differs from DecodeOverview:\nfast %q\nstd  %q", fmt.Sprintf("%+v", *fast), fmt.Sprintf("%+v", *ov))
			}
		} else {
			_, _ = schema.DecodeOverviewFast(body)
		}
		if errSim == nil {
			fast, err := schema.DecodeSimilarFast(body)
			if err != nil {
				t.Fatalf("DecodeSimilar accepts the body, DecodeSimilarFast does not: %v", err)
			}
			if !reflect.DeepEqual(fast, sim) {
				t.Fatalf("DecodeSimilarFast differs from DecodeSimilar:\nfast %q\nstd  %q", fmt.Sprintf("%+v", *fast), fmt.Sprintf("%+v", *sim))
			}
		} else {
			_, _ = schema.DecodeSimilarFast(body)
		}

		if ov != nil || sim != nil {
			b := NewBatch(mem)
			defer b.Release()
			err := b.Add("2026-10", "fuzz.example", time.Date(2026, 10, 2, 6, 0, 0, 0, time.UTC), ov, sim)
			var fe *FlattenError
			if err != nil {
				if !errors.As(err, &fe) {
					t.Fatalf("Batch.Add: error %T %v is not a *FlattenError", err, err)
				}
				if b.Rows() != 0 || b.Domains() != 0 {
					t.Fatalf("a failed Batch.Add left %d rows of %d domains behind", b.Rows(), b.Domains())
				}
			}
			recs := b.NewRecords()
			for i, r := range recs {
				checkRecord(t, SnapshotTables[i].Name, r)
				if i == 0 && err == nil && r.NumRows() != 1 {
					t.Fatalf("sites has %d rows for one domain", r.NumRows())
				}
				r.Release()
			}
		}
		if cm != nil {
			r := CountriesRecord(mem, cm)
			checkRecord(t, "countries", r)
			r.Release()
		}
	})
}

func checkDecodeErr(t *testing.T, what string, err error) {
	t.Helper()
	var de *schema.DecodeError
	if err != nil && !errors.As(err, &de) {
		t.Fatalf("%s: error %T %v is not a *DecodeError", what, err, err)
	}
}

// checkRecord fails unless every column has the record's row count and NOT NULL columns hold
// no nulls.
func checkRecord(t *testing.T, table string, r arrow.Record) {
	t.Helper()
	for j, col := range r.Columns() {
		if int64(col.Len()) != r.NumRows() {
			t.Fatalf("%s column %d has %d values, the record %d rows", table, j, col.Len(), r.NumRows())
		}
		if !r.Schema().Field(j).Nullable && col.NullN() > 0 {
			t.Fatalf("%s column %s is NOT NULL but holds %d nulls", table, r.Schema().Field(j).Name, col.NullN())
		}
	}
}
