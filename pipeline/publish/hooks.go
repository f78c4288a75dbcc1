package publish

import (
	"context"
	"log/slog"

	"sitewatch/pipeline/config"
)

// MonthHook publishes a month to another format after the Hive layout (or the restore copy):
// the Iceberg adapter's iceberg.AfterRun is one. The wiring (cmd/sitewatch) passes the formats
// it links in Options.After, so AfterRun writes every configured format without this package
// importing them, and without a registry an import fills as a side effect.
type MonthHook func(ctx context.Context, cfg config.PublishConfig, parquetRoot, month string, log *slog.Logger) error

func runAfterRunHooks(ctx context.Context, hooks []MonthHook, cfg config.PublishConfig, parquetRoot, month string, log *slog.Logger) error {
	for _, h := range hooks {
		if err := h(ctx, cfg, parquetRoot, month, log); err != nil {
			return err
		}
	}
	return nil
}
