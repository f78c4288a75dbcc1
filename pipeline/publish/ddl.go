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

// WriteDDL writes the statements that declare every published table to engine (EngineTrino:
// the Hive connector; EngineAthena) over the objects under location (s3://bucket/prefix),
// from the Arrow schemas of schema/flatten, and register the partitions present.
func WriteDDL(w io.Writer, engine, location string) error {
	tables := append(append([]flatten.Table{}, flatten.SnapshotTables...), flatten.CountriesTable)
	location = strings.TrimSuffix(location, "/")
	var b strings.Builder
	switch engine {
	case EngineTrino:
		b.WriteString("-- Trino (Hive connector, catalog `hive`) tables over the objects `sitewatch publish` writes.\n" +
			"-- Generated from schema/flatten by `go test ./pipeline/publish -run TestDDL -update`; do not edit.\n" +
			"-- Replace " + DDLLocation + " with publish.url. Run sync_partition_metadata after each new month.\n" +
			"CREATE SCHEMA IF NOT EXISTS hive.sitewatch;\n")
		for _, t := range tables {
			writeTrino(&b, t, location)
		}
	case EngineAthena:
		b.WriteString("-- Athena tables over the objects `sitewatch publish` writes.\n" +
			"-- Generated from schema/flatten by `go test ./pipeline/publish -run TestDDL -update`; do not edit.\n" +
			"-- Replace " + DDLLocation + " with publish.url. Run MSCK REPAIR TABLE after each new month.\n" +
			"CREATE DATABASE IF NOT EXISTS sitewatch;\n")
		for _, t := range tables {
			writeAthena(&b, t, location)
		}
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
