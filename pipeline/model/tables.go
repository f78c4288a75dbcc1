package model

// RunHealthTables are the tables ExportParquet mirrors per month beside the snapshot tables,
// so dashboards read run health (what each run loaded and cost, what failed, the quality
// findings) from the Parquet tree too.
var RunHealthTables = []string{"runs", "fetch_errors", "quality_checks"}

// Archive tables are mirrored per month too, so the bucket holds everything `sitewatch
// restore` needs: the raw answers every table is rebuilt from (bodies as stored, zstd) and
// the credit ledger. They are not BI tables: no view reads them.
const (
	TableRawResponses = "raw_responses"
	TableRunCalls     = "run_calls"
)

// ArchiveTables are the archive tables, in export order.
var ArchiveTables = []string{TableRawResponses, TableRunCalls}
