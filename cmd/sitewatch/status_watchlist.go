package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	"sitewatch/pipeline/config"
)

// watchlistJSON is sections.watchlist of `status`: the watchlist entries no run sends (not host
// names), null when every entry is sent. Runs complete without them, so `status` names them.
type watchlistJSON struct {
	Skipped []skippedJSON `json:"skipped"`
	Summary string        `json:"summary"` // config.Watchlist.SkippedLine
}

type skippedJSON struct {
	Line   int    `json:"line"`
	Input  string `json:"input"`
	Reason string `json:"reason"`
}

func collectWatchlist(_ context.Context, _ *sql.DB, cfg *config.Config) (any, error) {
	wl := config.NewWatchlist(cfg)
	if len(wl.Rejected) == 0 {
		return (*watchlistJSON)(nil), nil
	}
	j := &watchlistJSON{Summary: wl.SkippedLine()}
	for _, r := range wl.Rejected {
		j.Skipped = append(j.Skipped, skippedJSON{Line: r.Line, Input: r.Input, Reason: r.Reason})
	}
	return j, nil
}

func printWatchlist(w io.Writer, v any) error {
	j, _ := v.(*watchlistJSON)
	if j == nil {
		return nil
	}
	_, err := fmt.Fprintln(w, j.Summary)
	return err
}
