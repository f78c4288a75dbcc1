// Package dictionary builds the warehouse data dictionary: every table and view with its
// columns, types and comments, read from DuckDB's catalog (duckdb_tables, duckdb_views,
// duckdb_columns). The comments themselves live in the DDL (sql/migrations/0002_comments.sql
// for tables, sql/views/*.sql for views), so the dictionary cannot drift from the schema.
package dictionary

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	// Register the "duckdb" database/sql driver used by Default.
	_ "github.com/marcboeker/go-duckdb"

	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
)

// Kind says whether an Object is a table or a view.
type Kind string

// The kinds of warehouse objects.
const (
	KindTable Kind = "table"
	KindView  Kind = "view"
)

// Column is one column of a table or view.
type Column struct {
	Name     string
	Type     string // DuckDB type, e.g. VARCHAR, DOUBLE, DATE
	Nullable bool
	Comment  string // meaning, unit and scale; "" when the DDL has none
}

// Object is one table or view.
type Object struct {
	Name    string
	Kind    Kind
	Comment string
	Columns []Column
}

// Dictionary lists the warehouse's tables (first) and views, each sorted by name, and the
// data-quality checks recorded in quality_checks.
type Dictionary struct {
	Objects []Object
	Checks  []warehouse.QualityCheckDoc
}

// Build reads the tables and views of the main schema of db with their column comments. It
// returns an error when the catalog cannot be read.
func Build(ctx context.Context, db *sql.DB) (*Dictionary, error) {
	objs, err := readObjects(ctx, db)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(objs))
	for i, o := range objs {
		index[o.Name] = i
	}
	rows, err := db.QueryContext(ctx, `
		SELECT table_name, column_name, data_type, is_nullable, comment
		FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
		ORDER BY table_name, column_index`)
	if err != nil {
		return nil, fmt.Errorf("data dictionary: read duckdb_columns(): %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var table string
		var c Column
		var comment sql.NullString
		if err := rows.Scan(&table, &c.Name, &c.Type, &c.Nullable, &comment); err != nil {
			return nil, fmt.Errorf("data dictionary: scan column: %w", err)
		}
		c.Comment = comment.String
		if i, ok := index[table]; ok {
			objs[i].Columns = append(objs[i].Columns, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("data dictionary: read duckdb_columns(): %w", err)
	}
	return &Dictionary{Objects: objs, Checks: warehouse.QualityCheckDocs()}, nil
}

func readObjects(ctx context.Context, db *sql.DB) ([]Object, error) {
	rows, err := db.QueryContext(ctx, `
		SELECT table_name, 'table' AS kind, comment FROM duckdb_tables()
		WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary
		UNION ALL
		SELECT view_name, 'view', comment FROM duckdb_views()
		WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary
		ORDER BY kind, 1`)
	if err != nil {
		return nil, fmt.Errorf("data dictionary: read duckdb_tables()/duckdb_views(): %w", err)
	}
	defer func() { _ = rows.Close() }()
	var objs []Object
	for rows.Next() {
		var o Object
		var kind string
		var comment sql.NullString
		if err := rows.Scan(&o.Name, &kind, &comment); err != nil {
			return nil, fmt.Errorf("data dictionary: scan object: %w", err)
		}
		o.Kind, o.Comment = Kind(kind), comment.String
		objs = append(objs, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("data dictionary: read catalog: %w", err)
	}
	return objs, nil
}

// Default builds the dictionary of the schema this build of sitewatch creates, without any
// warehouse file: it migrates a private in-memory DuckDB and reads its catalog. It returns an
// error when DuckDB cannot start or a migration fails.
func Default(ctx context.Context) (*Dictionary, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("data dictionary: open in-memory duckdb: %w", err)
	}
	defer func() { _ = db.Close() }()
	// One connection is all this needs; the in-memory database lives as long as db.
	db.SetMaxOpenConns(1)
	if err := warehouse.Migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("data dictionary: migrate in-memory duckdb: %w", err)
	}
	return Build(ctx, db)
}

// Object returns the table or view called name, and false when there is none.
func (d *Dictionary) Object(name string) (Object, bool) {
	for _, o := range d.Objects {
		if o.Name == name {
			return o, true
		}
	}
	return Object{}, false
}

// WriteMarkdown writes the dictionary as Markdown: a contents list, then one section per
// table and view with a column table. It returns the first write error.
func (d *Dictionary) WriteMarkdown(w io.Writer) error {
	ew := textout.New(w)
	ew.Printf("# sitewatch data dictionary\n\n")
	ew.Printf("Generated from the warehouse DDL by `go test ./pipeline/dictionary -update`; " +
		"`sitewatch schema` prints the same. Do not edit by hand.\n\n")
	ew.Printf("Scales: shares in `sources_share`, `geography_share` and the views built on them are " +
		"decimals 0-1 (0.0208 = 2.08%%); AI platform shares (`share_pct`) are percent 0-100 exactly " +
		"as returned. Traffic figures are estimates unless `is_data_from_ga` is true.\n\n")
	for _, kind := range []Kind{KindTable, KindView} {
		ew.Printf("**%ss:** ", titleCase(string(kind)))
		first := true
		for _, o := range d.Objects {
			if o.Kind != kind {
				continue
			}
			if !first {
				ew.Printf(", ")
			}
			first = false
			ew.Printf("[`%s`](#%s)", o.Name, anchor(o))
		}
		ew.Printf("\n\n")
	}
	if len(d.Checks) > 0 {
		ew.Printf("**Data-quality checks:** [the rules behind `quality_checks`](#data-quality-checks)\n\n")
	}
	for _, o := range d.Objects {
		ew.Printf("## %s `%s`\n\n", o.Kind, o.Name)
		if o.Comment != "" {
			ew.Printf("%s\n\n", mdEscape(o.Comment))
		}
		ew.Printf("| column | type | null | meaning, unit, scale |\n|---|---|---|---|\n")
		for _, c := range o.Columns {
			null := "no"
			if c.Nullable {
				null = "yes"
			}
			ew.Printf("| `%s` | %s | %s | %s |\n", c.Name, c.Type, null, mdEscape(c.Comment))
		}
		ew.Printf("\n")
	}
	d.writeChecksMarkdown(ew)
	return ew.Err()
}

// writeChecksMarkdown documents every quality check: its rule, severity and tables.
func (d *Dictionary) writeChecksMarkdown(ew *textout.Writer) {
	if len(d.Checks) == 0 {
		return
	}
	ew.Printf("## Data-quality checks\n\n")
	ew.Printf("`sitewatch` runs these on each snapshot after loading it and records the findings in " +
		"`quality_checks` (one row per check, table and offending domain; one `ok` row when a check " +
		"found nothing on a table). A check never blocks loading.\n\n")
	ew.Printf("| check | severity | tables | rule |\n|---|---|---|---|\n")
	for _, c := range d.Checks {
		ew.Printf("| `%s` | %s | %s | %s |\n", c.Name, c.Severity, strings.Join(c.Tables, ", "), mdEscape(c.Rule))
	}
	ew.Printf("\n")
}

// WriteText writes the dictionary as plain text for a terminal: each object's comment, then
// its columns aligned in three columns (name, type, meaning). It returns the first write error.
func (d *Dictionary) WriteText(w io.Writer) error {
	ew := textout.New(w)
	for i, o := range d.Objects {
		if i > 0 {
			ew.Printf("\n")
		}
		ew.Printf("%s %s\n", strings.ToUpper(string(o.Kind)), o.Name)
		if o.Comment != "" {
			ew.Printf("  %s\n", o.Comment)
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, c := range o.Columns {
			_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, c.Type, c.Comment)
		}
		ew.Keep(tw.Flush())
	}
	if len(d.Checks) > 0 {
		ew.Printf("\nQUALITY CHECKS (rows of quality_checks; a check never blocks loading)\n")
		for _, c := range d.Checks {
			ew.Printf("  %s (%s; %s)\n    %s\n", c.Name, c.Severity, strings.Join(c.Tables, ", "), c.Rule)
		}
	}
	return ew.Err()
}

func anchor(o Object) string {
	return string(o.Kind) + "-" + o.Name
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdEscape keeps a comment inside one Markdown table cell.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
