// Package sql embeds the warehouse DDL: numbered migrations (applied in lexical order, one
// transaction each, recorded in schema_migrations) and the analyst views (recreated on open).
//
// Import it under one fixed alias, sqlfiles, because it clashes with database/sql.
package sql

import "embed"

// FS holds migrations/*.sql and views/*.sql.
//
//go:embed migrations/*.sql views/*.sql
var FS embed.FS
