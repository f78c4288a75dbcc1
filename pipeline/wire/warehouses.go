// Package wire opens the adapters a run needs and hands them to the core (package pipeline)
// through the ports it declares: the warehouse file (its writer lock, the wait for a short
// command's hold, the read-only opens), bound to the bucket's pull and the answer log. It is,
// with cmd/sitewatch, the only code that imports both the core and the warehouse; lint keeps
// the core off the adapters (docs/design.md, "Layering").
package wire

import (
	"context"
	"log/slog"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
)

// Puller takes the bucket's newer months into a warehouse before a run plans (0 credits);
// pipeline/bucketsync implements it. It fails when the bucket cannot be read (then nothing is
// paid: the warehouse cannot tell what was paid elsewhere).
type Puller interface {
	Pull(ctx context.Context, wh *warehouse.Warehouse) error
}

// Warehouses opens the warehouse of a config for the core (pipeline.Warehouses); Sync and
// AnswerLog, when set, are bound to the warehouse a run opens.
type Warehouses struct {
	Sync      Puller
	AnswerLog AnswerLog
}

var (
	_ pipeline.Warehouses    = Warehouses{}
	_ pipeline.Warehouse     = runWarehouse{}
	_ pipeline.ReadWarehouse = (*warehouse.Warehouse)(nil)
	_ pipeline.Store         = (*warehouse.Warehouse)(nil)
)

// LockForRun takes the run's shared writer lock of the warehouse at duckdbPath, failing at
// once (ErrWarehouseBusy) while a restore holds the file.
func (Warehouses) LockForRun(duckdbPath string) (release func(), err error) {
	l, err := lockForRun(duckdbPath)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// OpenRun opens cfg's warehouse for writing, waiting up to LockWait while a short sitewatch
// command holds it; the error names the file and its holder.
func (w Warehouses) OpenRun(ctx context.Context, cfg *config.Config, logger *slog.Logger) (pipeline.Warehouse, error) {
	wh, err := openWaiting(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, ParquetDir: cfg.Warehouse.Parquet, Logger: logger, LoadMemoryLimit: cfg.Warehouse.MemoryLimit,
		AttentionLists: AttentionLists(cfg), DiscoverFloors: DiscoverFloors(cfg)},
		LockWait, logger)
	if err != nil {
		return nil, err
	}
	return runWarehouse{Warehouse: wh, sync: w.Sync, log: w.AnswerLog}, nil
}

// OpenReadOnly opens the warehouse at duckdbPath read-only: it creates nothing and works while
// a BI tool reads the file.
func (Warehouses) OpenReadOnly(ctx context.Context, duckdbPath string, logger *slog.Logger) (pipeline.ReadWarehouse, error) {
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: duckdbPath, Logger: logger, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return wh, nil
}

// runWarehouse is a run's warehouse with the bucket's pull and the answer log bound to it.
type runWarehouse struct {
	*warehouse.Warehouse
	sync Puller
	log  AnswerLog
}

// Pull takes the bucket's newer months in; without a bucket it does nothing.
func (w runWarehouse) Pull(ctx context.Context) error {
	if w.sync == nil {
		return nil
	}
	return w.sync.Pull(ctx, w.Warehouse)
}

// StartLog starts the run's answer log when there is one and the lease can carry it.
func (w runWarehouse) StartLog(ctx context.Context, runID string, held pipeline.HeldLease) (stop func()) {
	return startAnswerLog(ctx, w.log, runID, w.Warehouse, held)
}
