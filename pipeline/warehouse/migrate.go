package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	sqlfiles "sitewatch/sql"
)

// Migrate applies every embedded migration not yet recorded in schema_migrations, in lexical
// order, each in its own transaction, then recreates the analyst views. It is safe to call on
// every open.
func Migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	applied, err := appliedMigrations(ctx, db)
	if err != nil {
		return err
	}
	names, err := fs.Glob(sqlfiles.FS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if applied[name] {
			continue
		}
		if err := applyMigration(ctx, db, name); err != nil {
			return err
		}
	}
	return createViews(ctx, db)
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
// one), so a changed definition takes effect on the next open without a migration.
func createViews(ctx context.Context, db *sql.DB) error {
	names, err := fs.Glob(sqlfiles.FS, "views/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		text, err := fs.ReadFile(sqlfiles.FS, name)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(text)) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, string(text)); err != nil {
			return fmt.Errorf("view %s: %w", name, err)
		}
	}
	return nil
}
