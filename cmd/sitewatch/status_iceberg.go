package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/iceberg"
)

// icebergPending lists the complete months of the Parquet tree whose Iceberg tables in
// publish.catalog do not hold them as they are (what `sitewatch publish` would commit), so
// status with publish.format iceberg (or both) knows what it published. It only reads the
// catalog: a missing namespace is not created.
func icebergPending(ctx context.Context, db *sql.DB, cfg *config.Config) ([]string, error) {
	months, err := completeMonthsHeld(ctx, db, cfg.Warehouse.Parquet)
	if err != nil || len(months) == 0 {
		return nil, err
	}
	lake, err := iceberg.New(ctx, cfg.Publish, iceberg.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer closeIceberg(lake)
	return lake.Pending(ctx, cfg.Warehouse.Parquet, months)
}

// completeMonthsHeld are the months, oldest first, that have a complete run and a partition in
// the Parquet tree: the months publish writes as tables.
func completeMonthsHeld(ctx context.Context, db *sql.DB, parquet string) ([]string, error) {
	inTree, err := publish.Months(parquet)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT snapshot_month FROM complete_months ORDER BY snapshot_month`)
	if err != nil {
		return nil, fmt.Errorf("read complete_months: %w", err)
	}
	defer func() { _ = rows.Close() }() // read-only
	var months []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, fmt.Errorf("read complete_months: %w", err)
		}
		if slices.Contains(inTree, m) {
			months = append(months, m)
		}
	}
	return months, rows.Err()
}

// unionMonths merges two sorted month lists without duplicates.
func unionMonths(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// withoutMonths is months less those in drop: a month the bucket holds newer is pulled by the
// next run, never advised for publishing (it would overwrite another machine's month).
func withoutMonths(months, drop []string) []string {
	return slices.DeleteFunc(months, func(m string) bool { return slices.Contains(drop, m) })
}
