package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/textout"
)

// sourceJSON is one item of sections.sources: what a credit source paid for the last run
// that spent anything, from the run_calls ledger.
type sourceJSON struct {
	Source  string `json:"source"`
	Credits int64  `json:"credits"`
}

// sourcesJSON is sections.sources (null before any run was charged).
type sourcesJSON struct {
	RunID   string       `json:"run_id"`
	PaidBy  []sourceJSON `json:"paid_by"`
	Sources []string     `json:"configured"` // the credit sources of the config, in config order
}

func collectSources(ctx context.Context, db *sql.DB, cfg *config.Config) (any, error) {
	var runID string
	err := db.QueryRowContext(ctx, `SELECT run_id FROM run_calls GROUP BY run_id ORDER BY max(fetched_at) DESC LIMIT 1`).Scan(&runID)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the credit ledger: %w", err)
	}
	// Spend order, as runs.credits_by_source records it (sources fetch at once, so the first
	// answer of each does not tell it); by first answer for a run that has none.
	rows, err := db.QueryContext(ctx, `SELECT coalesce(source, '(unnamed)'), sum(credits) FROM run_calls WHERE run_id = ?
		GROUP BY ALL ORDER BY coalesce(nullif(strpos((SELECT credits_by_source FROM runs WHERE run_id = ?), '"' || any_value(source) || '":'), 0), 1000000),
		min(fetched_at)`, runID, runID)
	if err != nil {
		return nil, fmt.Errorf("read the credit ledger: %w", err)
	}
	defer func() { _ = rows.Close() }()
	out := &sourcesJSON{RunID: runID, PaidBy: []sourceJSON{}}
	for rows.Next() {
		var s sourceJSON
		if err := rows.Scan(&s.Source, &s.Credits); err != nil {
			return nil, fmt.Errorf("read the credit ledger: %w", err)
		}
		out.PaidBy = append(out.PaidBy, s)
	}
	for _, sc := range cfg.Sources() {
		out.Sources = append(out.Sources, sc.Name)
	}
	return out, rows.Err()
}

func printSourcesStatus(w io.Writer, v any) error {
	s, ok := v.(*sourcesJSON)
	if !ok || s == nil {
		return nil
	}
	parts := make([]string, len(s.PaidBy))
	for i, p := range s.PaidBy {
		parts[i] = fmt.Sprintf("%s %s", p.Source, textout.Thousands(p.Credits))
	}
	_, err := fmt.Fprintf(w, "paid by source (run %s): %s\n", s.RunID, strings.Join(parts, ", "))
	return err
}
