package iceberg

import (
	"context"
	"log/slog"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
)

var _ publish.MonthHook = AfterRun

// AfterRun writes month's Iceberg tables when publish.format is iceberg or both: the wiring
// passes it to the run's automatic publish (publish.Options.After).
func AfterRun(ctx context.Context, cfg config.PublishConfig, parquetRoot, month string, log *slog.Logger) error {
	if !cfg.WritesIceberg() {
		return nil
	}
	p, err := New(ctx, cfg, Options{Logger: log})
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // only releases catalog connections
	_, err = p.Month(ctx, parquetRoot, month)
	return err
}
