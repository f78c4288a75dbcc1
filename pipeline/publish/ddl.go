package publish

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"sitewatch/schema/flatten"
)

// Engines WriteDDL knows.
const (
	EngineTrino  = "trino"
	EngineAthena = "athena"
)

// DDLLocation is the placeholder of the publish URL in generated DDL.
const DDLLocation = "s3://BUCKET/PREFIX"

// RunHealthTables are the published tables a run writes about itself (the Parquet export of
// model.RunHealthTables): what each run loaded and cost, what failed, the quality findings.
// Their columns are the warehouse's (sql/migrations), as Parquet stores them; a test compares
// them with the DuckDB tables, so the DDL cannot drift from what is published.
var RunHealthTables = []flatten.Table{
	{Name: "runs", Schema: schemaOf(
		field("run_id", arrow.BinaryTypes.String), field("snapshot_month", arrow.BinaryTypes.String),
		field("started_at", timestampUS), field("finished_at", timestampUS),
		field("status", arrow.BinaryTypes.String), field("domains_total", arrow.PrimitiveTypes.Int32),
		field("domains_loaded", arrow.PrimitiveTypes.Int32), field("domains_rejected", arrow.PrimitiveTypes.Int32),
		field("requests", arrow.PrimitiveTypes.Int32), field("credits_spent", arrow.PrimitiveTypes.Int32),
		field("credits_remaining", arrow.PrimitiveTypes.Int64), field("rate_limited", arrow.PrimitiveTypes.Int32),
		field("message", arrow.BinaryTypes.String), field("credits_by_source", arrow.BinaryTypes.String))},
	{Name: "fetch_errors", Schema: schemaOf(
		field("run_id", arrow.BinaryTypes.String), field("snapshot_month", arrow.BinaryTypes.String),
		field("domain", arrow.BinaryTypes.String), field("endpoint", arrow.BinaryTypes.String),
		field("http_status", arrow.PrimitiveTypes.Int32), field("code", arrow.BinaryTypes.String),
		field("message", arrow.BinaryTypes.String), field("occurred_at", timestampUS))},
	{Name: "quality_checks", Schema: schemaOf(
		field("snapshot_month", arrow.BinaryTypes.String), field("check", arrow.BinaryTypes.String),
		field("table_name", arrow.BinaryTypes.String), field("domain", arrow.BinaryTypes.String),
		field("observed", arrow.BinaryTypes.String), field("expected", arrow.BinaryTypes.String),
		field("severity", arrow.BinaryTypes.String), field("observed_value", arrow.PrimitiveTypes.Float64),
		field("checked_at", timestampUS))},
}

// timestampUS is how the Parquet files store TIMESTAMP columns: microseconds, no zone (UTC by
// convention), as schema/flatten's timestamps.
var timestampUS = &arrow.TimestampType{Unit: arrow.Microsecond}

func field(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

func schemaOf(fields ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }

// PublishedTables are every table a publish writes, in the order the DDL declares them.
func PublishedTables() []flatten.Table {
	tables := append([]flatten.Table{}, flatten.SnapshotTables...)
	tables = append(tables, RunHealthTables...)
	return append(tables, flatten.CountriesTable)
}

// WriteDDL writes the statements that declare every published table (PublishedTables) to
// engine (EngineTrino: the Hive connector; EngineAthena) over the objects under location
// (s3://bucket/prefix), register the partitions present, and create the complete_months view,
// which applies the warehouse's "complete month" rule to the published runs table.
func WriteDDL(w io.Writer, engine, location string) error {
	tables := PublishedTables()
	location = strings.TrimSuffix(location, "/")
	var b strings.Builder
	switch engine {
	case EngineTrino:
		b.WriteString("-- Trino (Hive connector, catalog `hive`) tables over the objects `sitewatch publish` writes.\n" +
			"-- Generated from schema/flatten and publish.RunHealthTables by `go test ./pipeline/publish -run TestDDL -update`; do not edit.\n" +
			"-- Replace " + DDLLocation + " with publish.url. Run sync_partition_metadata after each new month.\n" +
			"CREATE SCHEMA IF NOT EXISTS hive.sitewatch;\n")
		for _, t := range tables {
			writeTrino(&b, t, location)
		}
		writeCompleteMonths(&b, "hive.sitewatch.")
	case EngineAthena:
		b.WriteString("-- Athena tables over the objects `sitewatch publish` writes.\n" +
			"-- Generated from schema/flatten and publish.RunHealthTables by `go test ./pipeline/publish -run TestDDL -update`; do not edit.\n" +
			"-- Replace " + DDLLocation + " with publish.url. Run MSCK REPAIR TABLE after each new month.\n" +
			"CREATE DATABASE IF NOT EXISTS sitewatch;\n")
		for _, t := range tables {
			writeAthena(&b, t, location)
		}
		writeCompleteMonths(&b, "sitewatch.")
	default:
		return fmt.Errorf("DDL for engine %q: use %s or %s", engine, EngineTrino, EngineAthena)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dataColumns returns t's columns without snapshot_month (a partition column, in the path)
// and whether t is partitioned by it.
func dataColumns(t flatten.Table) ([]arrow.Field, bool) {
	var cols []arrow.Field
	partitioned := false
	for _, f := range t.Schema.Fields() {
		if f.Name == "snapshot_month" {
			partitioned = true
			continue
		}
		cols = append(cols, f)
	}
	return cols, partitioned
}

func writeTrino(b *strings.Builder, t flatten.Table, location string) {
	cols, partitioned := dataColumns(t)
	fmt.Fprintf(b, "\nCREATE TABLE IF NOT EXISTS hive.sitewatch.%s (\n", t.Name)
	for i, f := range cols {
		sep := ","
		if i == len(cols)-1 && !partitioned {
			sep = ""
		}
		fmt.Fprintf(b, "  %q %s%s\n", f.Name, sqlType(f.Type, EngineTrino), sep)
	}
	if partitioned {
		b.WriteString("  \"snapshot_month\" varchar\n")
	}
	fmt.Fprintf(b, ") WITH (\n  format = 'PARQUET',\n  external_location = '%s/%s'", location, t.Name)
	if partitioned {
		b.WriteString(",\n  partitioned_by = ARRAY['snapshot_month']")
	}
	b.WriteString("\n);\n")
	if partitioned {
		fmt.Fprintf(b, "CALL hive.system.sync_partition_metadata('sitewatch', '%s', 'FULL');\n", t.Name)
	}
}

func writeAthena(b *strings.Builder, t flatten.Table, location string) {
	cols, partitioned := dataColumns(t)
	fmt.Fprintf(b, "\nCREATE EXTERNAL TABLE IF NOT EXISTS sitewatch.%s (\n", t.Name)
	for i, f := range cols {
		sep := ","
		if i == len(cols)-1 {
			sep = ""
		}
		fmt.Fprintf(b, "  `%s` %s%s\n", f.Name, sqlType(f.Type, EngineAthena), sep)
	}
	b.WriteString(")\n")
	if partitioned {
		b.WriteString("PARTITIONED BY (snapshot_month string)\n")
	}
	fmt.Fprintf(b, "STORED AS PARQUET\nLOCATION '%s/%s/';\n", location, t.Name)
	if partitioned {
		fmt.Fprintf(b, "MSCK REPAIR TABLE sitewatch.%s;\n", t.Name)
	}
}

// writeCompleteMonths writes the complete_months view of sql/views/changes.sql in SQL both
// Trino and Athena accept (no QUALIFY; the sites count joined, not correlated): a month is
// complete when its latest finished run, other than a month_mismatch that stored nothing, left
// every watchlist domain loaded or rejected. A test runs it in DuckDB against the warehouse's
// own view.
func writeCompleteMonths(b *strings.Builder, qual string) {
	fmt.Fprintf(b, `
-- complete_months: the months whose latest finished run left every watchlist domain loaded or
-- rejected by the API, each with the complete month before it (the warehouse's view of the same name).
CREATE OR REPLACE VIEW %[1]scomplete_months AS
WITH latest AS (
  SELECT * FROM (
    SELECT r.*, row_number() OVER (PARTITION BY r.snapshot_month ORDER BY r.started_at DESC, r.run_id DESC) AS rn
    FROM %[1]sruns r
    WHERE r.status NOT IN ('running', 'month_mismatch')
  ) ranked
  WHERE rn = 1
), loaded AS (
  SELECT snapshot_month, count(*) AS n FROM %[1]ssites GROUP BY snapshot_month
)
SELECT
  l.snapshot_month,
  lag(l.snapshot_month) OVER (ORDER BY l.snapshot_month) AS previous_month,
  l.run_id,
  l.status,
  l.finished_at,
  l.domains_total,
  l.domains_loaded,
  l.domains_rejected,
  coalesce(s.n, 0) AS domains_in_warehouse
FROM latest l
LEFT JOIN loaded s ON s.snapshot_month = l.snapshot_month
WHERE l.status IN ('complete', 'up_to_date')
   OR (l.domains_total > 0 AND coalesce(l.domains_loaded, 0) + coalesce(l.domains_rejected, 0) >= l.domains_total);
`, qual)
}

// sqlType maps an Arrow type of schema/flatten to engine's column type. The Parquet files
// store timestamps as microseconds without zone (UTC by convention).
func sqlType(t arrow.DataType, engine string) string {
	trino := engine == EngineTrino
	switch t.ID() {
	case arrow.STRING:
		return pick(trino, "varchar", "string")
	case arrow.DATE32:
		return "date"
	case arrow.TIMESTAMP:
		return pick(trino, "timestamp(6)", "timestamp")
	case arrow.INT64:
		return "bigint"
	case arrow.INT32:
		return pick(trino, "integer", "int")
	case arrow.FLOAT64:
		return "double"
	case arrow.BOOL:
		return "boolean"
	}
	panic(fmt.Sprintf("publish: no %s type for Arrow %s: add it to sqlType", engine, t))
}

func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}
