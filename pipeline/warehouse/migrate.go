package warehouse

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"

	sqlfiles "sitewatch/sql"
)

// Migrate applies every embedded migration not yet recorded in schema_migrations, in lexical
// order, each in its own transaction, then recreates the analyst views. It is safe to call on
// every open.
func Migrate(ctx context.Context, db *sql.DB) error {
	_, err := migrate(ctx, db)
	return err
}

// migrate is Migrate; changed says it applied a migration or created the views (the file's
// schema or definitions changed: stored lists need a refresh, cachestate.go).
func migrate(ctx context.Context, db *sql.DB) (changed bool, err error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)`); err != nil {
		return false, fmt.Errorf("create schema_migrations: %w", err)
	}
	applied, err := appliedMigrations(ctx, db)
	if err != nil {
		return false, err
	}
	names, err := fs.Glob(sqlfiles.FS, "migrations/*.sql")
	if err != nil {
		return false, err
	}
	sort.Strings(names)
	for _, name := range names {
		if applied[name] {
			continue
		}
		if err := applyMigration(ctx, db, name); err != nil {
			return true, err
		}
		changed = true
	}
	created, err := createViews(ctx, db)
	return changed || created, err
}

func appliedMigrations(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer func() { _ = rows.Close() }()
	applied := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		applied[name] = true
	}
	return applied, rows.Err()
}

func applyMigration(ctx context.Context, db *sql.DB, name string) error {
	text, err := fs.ReadFile(sqlfiles.FS, name)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, string(text)); err != nil {
		return fmt.Errorf("migration %s %s: %w", name, migrationUndone, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name) VALUES (?)`, name); err != nil {
		return fmt.Errorf("record migration %s %s: %w", name, migrationUndone, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s %s: %w", name, migrationUndone, err)
	}
	return nil
}

// migrationUndone tells the reader of a failed migration that it was one transaction.
const migrationUndone = "(nothing of it was kept; it runs again at the next open)"

// createViews recreates every view in sql/views in lexical order (a view may use an earlier
// one), so a changed definition takes effect on the next open without a migration. Views whose
// definitions are the ones recorded at the last creation, all still present, are left as they
// are: recreating them writes hundreds of KB of write-ahead log at every open, which a nearly
// full disk refuses before the run has done anything.
func createViews(ctx context.Context, db *sql.DB) (created bool, err error) {
	texts, err := viewTexts()
	if err != nil {
		return false, err
	}
	stamp := viewsStamp(texts)
	if viewsPresent(ctx, db, stamp) {
		return false, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("create views: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	for _, v := range texts {
		if _, err := tx.ExecContext(ctx, v.text); err != nil {
			return false, fmt.Errorf("view %s: %w", v.name, err)
		}
	}
	// Stored needs-attention lists record the definitions they were computed by
	// (sql/views/needs_attention.sql): a list made by other definitions is never read.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE OR REPLACE MACRO attention_definition() AS '%s'`, stamp)); err != nil {
		return false, fmt.Errorf("stamp the views: %w", err)
	}
	var views int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE NOT internal`).Scan(&views); err != nil {
		return false, fmt.Errorf("count views: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM schema_migrations WHERE name LIKE 'views/%'`); err != nil {
		return false, fmt.Errorf("record views: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name) VALUES (?)`, fmt.Sprintf("%s/%d", stamp, views)); err != nil {
		return false, fmt.Errorf("record views: %w", err)
	}
	return true, tx.Commit()
}

type viewText struct{ name, text string }

// viewTexts returns the view files in the order they must be created (sqlfiles.Views).
func viewTexts() ([]viewText, error) {
	views, err := sqlfiles.Views()
	if err != nil {
		return nil, err
	}
	out := make([]viewText, len(views))
	for i, v := range views {
		out[i] = viewText{v.Name, v.Text}
	}
	return out, nil
}

// viewsStamp names one set of view definitions: "views/" and their SHA-256.
func viewsStamp(texts []viewText) string {
	h := sha256.New()
	for _, v := range texts {
		fmt.Fprintf(h, "%s\x00%s\x00", v.name, v.text)
	}
	return fmt.Sprintf("views/%x", h.Sum(nil)[:12])
}

// viewsPresent tells whether the views of stamp were created and as many views exist as that
// creation made (a user's DROP VIEW makes the next open create them again).
func viewsPresent(ctx context.Context, db *sql.DB, stamp string) bool {
	var want, got int
	err := db.QueryRowContext(ctx, `SELECT CAST(split_part(name, '/', 3) AS INTEGER) FROM schema_migrations WHERE name LIKE ? || '/%'`, stamp).Scan(&want)
	if err != nil {
		return false
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE NOT internal`).Scan(&got); err != nil {
		return false
	}
	return got >= want
}
