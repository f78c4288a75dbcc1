// Package flatten turns decoded API responses (package schema) into Arrow records, one per
// warehouse table, and declares those tables' Arrow schemas.
package flatten

import (
	"github.com/apache/arrow/go/v17/arrow"
)

// Arrow types of the warehouse columns. They map onto the DuckDB types of
// sql/migrations/0001_tables.sql: utf8 → VARCHAR, date32 → DATE, timestamp[us] (no zone) →
// TIMESTAMP, int64 → BIGINT, int32 → INTEGER, float64 → DOUBLE, bool → BOOLEAN.
var (
	typeString    = arrow.BinaryTypes.String
	typeDate      = arrow.FixedWidthTypes.Date32
	typeTimestamp = &arrow.TimestampType{Unit: arrow.Microsecond}
	typeInt64     = arrow.PrimitiveTypes.Int64
	typeInt32     = arrow.PrimitiveTypes.Int32
	typeFloat64   = arrow.PrimitiveTypes.Float64
	typeBool      = arrow.FixedWidthTypes.Boolean
)

func col(name string, t arrow.DataType, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: nullable}
}

func key() []arrow.Field {
	return []arrow.Field{col("snapshot_month", typeString, false), col("domain", typeString, false)}
}

func table(fields ...arrow.Field) *arrow.Schema {
	return arrow.NewSchema(append(key(), fields...), nil)
}

// Table names of the warehouse fed by the flatteners.
const (
	TableSites             = "sites"
	TableTrafficHistory    = "traffic_history"
	TableSourcesShare      = "sources_share"
	TableGeographyShare    = "geography_share"
	TableKeywords          = "keywords"
	TableAIPlatforms       = "ai_platforms"
	TableAIPlatformHistory = "ai_platform_history"
	TableAIPrompts         = "ai_prompts"
	TableSimilarSites      = "similar_sites"
	TableSiteTags          = "site_tags"
	TableCountries         = "countries"
)

// Table is one warehouse table and the Arrow schema of its rows. Field names are the column
// names of the DuckDB table; the order is the DDL order.
type Table struct {
	Name   string
	Schema *arrow.Schema
}

// Snapshot tables, indexes into SnapshotTables.
const (
	idxSites = iota
	idxTrafficHistory
	idxSourcesShare
	idxGeographyShare
	idxKeywords
	idxAIPlatforms
	idxAIPlatformHistory
	idxAIPrompts
	idxSimilarSites
	idxSiteTags
	numSnapshotTables
)

// SnapshotTables are the tables keyed by (snapshot_month, domain), in the order Batch.NewRecords
// returns their records. Each begins with snapshot_month and domain.
var SnapshotTables = []Table{
	idxSites: {TableSites, table(
		col("requested_url", typeString, true),
		col("snapshot_date", typeDate, true),
		col("data_coverage", typeString, true),
		col("title", typeString, true),
		col("description", typeString, true),
		col("category_slug", typeString, true),
		col("category_name", typeString, true),
		col("favicon_url", typeString, true),
		col("screenshot_desktop_url", typeString, true),
		col("screenshot_mobile_url", typeString, true),
		col("is_small_site", typeBool, true),
		col("is_from_google_analytics", typeBool, true),
		col("is_data_from_ga", typeBool, true),
		col("global_rank", typeInt64, true),
		col("country_code", typeString, true),
		col("country_rank", typeInt64, true),
		col("category_rank", typeInt64, true),
		col("pages_per_visit", typeFloat64, true),
		col("bounce_rate", typeFloat64, true),
		col("average_visit_duration_seconds", typeFloat64, true),
		col("traffic_period", typeString, true),
		col("ai_total_visits", typeInt64, true),
		col("ai_global_traffic_share", typeFloat64, true),
		col("total_visits", typeFloat64, true),
		col("fetched_at", typeTimestamp, true),
	)},
	idxTrafficHistory: {TableTrafficHistory, table(
		col("month", typeDate, false),
		col("visits", typeInt64, true),
	)},
	idxSourcesShare: {TableSourcesShare, table(
		col("channel", typeString, false),
		col("share", typeFloat64, true),
	)},
	idxGeographyShare: {TableGeographyShare, table(
		col("country_code", typeString, false),
		col("share", typeFloat64, true),
	)},
	idxKeywords: {TableKeywords, table(
		col("position", typeInt32, false),
		col("keyword", typeString, false),
		col("search_volume", typeInt64, true),
		col("cpc_usd", typeFloat64, true),
		col("estimated_value_usd", typeFloat64, true),
	)},
	idxAIPlatforms: {TableAIPlatforms, table(
		col("platform", typeString, false),
		col("rank", typeInt64, true),
		col("share_pct", typeFloat64, true),
	)},
	idxAIPlatformHistory: {TableAIPlatformHistory, table(
		col("platform", typeString, false),
		col("month", typeDate, false),
		col("share_pct", typeFloat64, true),
	)},
	idxAIPrompts: {TableAIPrompts, table(
		col("position", typeInt32, false),
		col("prompt", typeString, false),
	)},
	idxSimilarSites: {TableSimilarSites, table(
		col("position", typeInt32, false),
		col("similar_domain", typeString, false),
		col("title", typeString, true),
		col("description", typeString, true),
		col("global_rank", typeInt64, true),
		col("country_code", typeString, true),
		col("country_name", typeString, true),
		col("country_rank", typeInt64, true),
		col("category_slug", typeString, true),
		col("category_rank", typeInt64, true),
		col("total_visits", typeFloat64, true),
		col("favicon_url", typeString, true),
		col("screenshot_desktop_url", typeString, true),
		col("screenshot_mobile_url", typeString, true),
	)},
	idxSiteTags: {TableSiteTags, table(
		col("tag", typeString, false),
	)},
}

// CountriesTable is the countries table, filled from the country-metadata response.
var CountriesTable = Table{TableCountries, arrow.NewSchema([]arrow.Field{
	col("alpha2", typeString, false),
	col("alpha3", typeString, false),
	col("numeric", typeString, false),
	col("name", typeString, false),
}, nil)}

// ColumnNames returns the column names of t in order.
func (t Table) ColumnNames() []string {
	names := make([]string, t.Schema.NumFields())
	for i, f := range t.Schema.Fields() {
		names[i] = f.Name
	}
	return names
}
