package publish

import (
	"context"
	"log/slog"
	"sync"

	"sitewatch/pipeline/config"
)

// MonthHook publishes a month to another format after the Hive layout: the Iceberg adapter
// (pipeline/publish/iceberg) registers one, so AfterRun writes every configured format without
// this package importing it.
type MonthHook func(ctx context.Context, cfg config.PublishConfig, parquetRoot, month string, log *slog.Logger) error

var (
	hooksMu sync.Mutex
	hooks   []MonthHook
)

// RegisterAfterRun adds h to the hooks AfterRun calls, in registration order.
func RegisterAfterRun(h MonthHook) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	hooks = append(hooks, h)
}

func runAfterRunHooks(ctx context.Context, cfg config.PublishConfig, parquetRoot, month string, log *slog.Logger) error {
	hooksMu.Lock()
	hs := append([]MonthHook(nil), hooks...)
	hooksMu.Unlock()
	for _, h := range hs {
		if err := h(ctx, cfg, parquetRoot, month, log); err != nil {
			return err
		}
	}
	return nil
}
