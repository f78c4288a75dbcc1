package iceberg

import (
	"context"
	"log/slog"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
)

// The run's automatic publish (publish.AfterRun) writes the Iceberg tables too when
// publish.format is iceberg or both.
func init() { publish.RegisterAfterRun(afterRun) }

func afterRun(ctx context.Context, cfg config.PublishConfig, parquetRoot, month string, log *slog.Logger) error {
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
