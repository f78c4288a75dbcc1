package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// testWarehouse opens a warehouse in dir (t.TempDir() when ""), with a checked allocator
// whose balance is asserted to be zero at cleanup.
func testWarehouse(t *testing.T, dir string) *Warehouse {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	w, err := Open(context.Background(), Options{
		DuckDBPath: filepath.Join(dir, "db", "sitewatch.duckdb"),
		ParquetDir: filepath.Join(dir, "parquet"),
		Allocator:  mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	})
	return w
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schema", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var fetchedAt = time.Date(2026, 11, 2, 6, 0, 0, 123456000, time.UTC)

// fixtureDomains maps each golden domain to its fixture case.
var fixtureDomains = []struct{ domain, name string }{
	{"example.com", "full"},
	{"missing.example", "missing"},
	{"nulls.example", "nulls"},
	{"objnull.example", "objnull"},
}

// storeFixtures stores every fixture pair and the countries into snapshot.
func storeFixtures(t *testing.T, w *Warehouse, snapshot string) {
	t.Helper()
	ctx := context.Background()
	for i, f := range fixtureDomains {
		for _, ep := range []schema.Endpoint{schema.EndpointOverview, schema.EndpointSimilar} {
			prefix := "overview_"
			if ep == schema.EndpointSimilar {
				prefix = "similar_"
			}
			raw := model.Raw{Endpoint: ep, Domain: f.domain, Body: fixture(t, prefix+f.name+".json"),
				FetchedAt: fetchedAt.Add(time.Duration(i) * time.Minute)}
			if err := w.Store(ctx, snapshot, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Store(ctx, snapshot, model.Raw{Endpoint: schema.EndpointCountries, Body: fixture(t, "countries.json"), FetchedAt: fetchedAt}); err != nil {
		t.Fatal(err)
	}
}

// allTables are the tables the golden dump covers.
func allTables() []flatten.Table {
	return append(append([]flatten.Table(nil), flatten.SnapshotTables...), flatten.CountriesTable)
}

// dumpTables renders every row of every table (sorted) as text, one value per column,
// NULL spelled out and strings quoted, so a golden comparison is value by value.
func dumpTables(t *testing.T, db *sql.DB, where string) string {
	t.Helper()
	var sb strings.Builder
	for _, tab := range allTables() {
		q := fmt.Sprintf(`SELECT %s FROM %s`, quotedColumns(tab), tab.Name)
		if where != "" && tab.Name != flatten.TableCountries {
			q += " WHERE " + where
		}
		fmt.Fprintf(&sb, "== %s (%s)\n", tab.Name, strings.Join(tab.ColumnNames(), ", "))
		for _, row := range queryRows(t, db, q+" ORDER BY ALL") {
			sb.WriteString(row)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// queryRows returns each row of query formatted by formatValue, joined by " | ".
func queryRows(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = formatValue(v)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(v)
	case float64:
		return "f:" + strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case bool, int32, int64, int8, int16, uint8, uint16, uint32, uint64, int:
		return fmt.Sprint(v)
	default:
		return fmt.Sprintf("%T:%v", v, v)
	}
}

func count(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// storedCount is how many domains st holds a body of.
func storedCount(st *model.SnapshotState) int {
	n := 0
	st.EachStored(func(string, model.Endpoints) { n++ })
	return n
}
