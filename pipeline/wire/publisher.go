package wire

import (
	"context"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
)

// Publisher is a run's publish over pipeline/publish (pipeline.Publisher). After are the
// formats it writes after the Hive layout (cmd/sitewatch passes the Iceberg adapter's); nil:
// none.
type Publisher struct {
	After []publish.MonthHook
}

var _ pipeline.Publisher = Publisher{}

// Month uploads month, just completed, to cfg's publish.url (publish.AfterRun); nil, nil when
// publishing is off.
func (p Publisher) Month(ctx context.Context, cfg *config.Config, month, runID string, opts pipeline.PublishOptions) (*pipeline.Upload, error) {
	res, err := publish.AfterRun(ctx, cfg.Publish, cfg.Warehouse.Parquet, month, runID, p.options(opts))
	return uploadOf(res), err
}

// RestoreCopy uploads the restore copy of month, left incomplete (publish.SaveAfterStop);
// nil, nil when publishing is off.
func (p Publisher) RestoreCopy(ctx context.Context, cfg *config.Config, month, runID string, opts pipeline.PublishOptions) (*pipeline.Upload, error) {
	res, err := publish.SaveAfterStop(ctx, cfg.Publish, cfg.Warehouse.Parquet, month, runID, p.options(opts))
	return uploadOf(res), err
}

func (p Publisher) options(opts pipeline.PublishOptions) publish.Options {
	return publish.Options{Logger: opts.Logger, FoldLogs: opts.FoldLogs, After: p.After}
}

func uploadOf(res *publish.Result) *pipeline.Upload {
	if res == nil {
		return nil
	}
	return &pipeline.Upload{ManifestURL: res.ManifestURL, Files: res.Files, Uploaded: res.Uploaded, Unchanged: res.Unchanged}
}
