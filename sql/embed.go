// Package sql embeds the warehouse DDL: numbered migrations (applied in lexical order, one
// transaction each, recorded in schema_migrations) and the analyst views (recreated on open).
//
// Import it under one fixed alias, sqlfiles, because it clashes with database/sql.
package sql

import "embed"

// FS holds migrations/*.sql, views/*.sql and bi/*.sql (the views over the Parquet tree).
//
//go:embed migrations/*.sql views/*.sql bi/*.sql
var FS embed.FS
