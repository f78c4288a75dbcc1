package wire

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
)

// recordingPull is a Puller that notes the warehouse it was handed.
type recordingPull struct{ got *warehouse.Warehouse }

func (p *recordingPull) Pull(_ context.Context, wh *warehouse.Warehouse) error {
	p.got = wh
	return nil
}

// recordingLog is an AnswerLog that notes whether it was started and stopped.
type recordingLog struct{ started, stopped bool }

func (l *recordingLog) Start(context.Context, string, *warehouse.Warehouse, LogFence) func() {
	l.started = true
	return func() { l.stopped = true }
}

// fence is a held lease that carries the answer log.
type fence struct{ pipeline.HeldLease }

func (fence) WatchLog(time.Duration)    {}
func (fence) Logged(time.Time)          {}
func (fence) Renewals() <-chan struct{} { return nil }

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := &config.Config{}
	cfg.Warehouse.DuckDB = filepath.Join(dir, "warehouse.duckdb")
	cfg.Warehouse.Parquet = filepath.Join(dir, "parquet")
	return cfg
}

// TestOpenRunBindsTheBucketToTheWarehouse: the warehouse a run opens pulls the bucket into
// itself and starts the answer log on itself when the lease carries one; without a bucket or
// a log both do nothing; the file opened for the run reads back read-only once closed.
func TestOpenRunBindsTheBucketToTheWarehouse(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	pull, log := &recordingPull{}, &recordingLog{}
	wh, err := Warehouses{Sync: pull, AnswerLog: log}.OpenRun(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Pull(ctx); err != nil || pull.got == nil || pull.got != wh.(runWarehouse).Warehouse {
		t.Errorf("Pull: err %v, pulled into %p; want the opened warehouse %p", err, pull.got, wh.(runWarehouse).Warehouse)
	}
	wh.StartLog(ctx, "run-1", nil)() // a lease that cannot carry the log: none started
	if log.started {
		t.Error("the answer log started under a lease that cannot carry it")
	}
	wh.StartLog(ctx, "run-1", fence{})()
	if !log.started || !log.stopped {
		t.Errorf("answer log started %v, stopped %v; want both under a lease that carries it", log.started, log.stopped)
	}
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}

	bare, err := Warehouses{}.OpenRun(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bare.Pull(ctx); err != nil {
		t.Errorf("Pull without a bucket: %v, want nil", err)
	}
	bare.StartLog(ctx, "run-2", fence{})() // no log: nothing to start, nothing to panic on
	if err := bare.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Warehouses{}.OpenReadOnly(ctx, cfg.Warehouse.DuckDB, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ro.Close() }()
	if month, err := ro.LatestMonth(ctx); err != nil || month != "" {
		t.Errorf("LatestMonth of an empty warehouse: %q, %v; want \"\", nil", month, err)
	}
}

// TestRunLockKeepsARestoreOut: while a run holds the writer lock a restore is refused at once
// (and the other way round), and the lock is free again once released.
func TestRunLockKeepsARestoreOut(t *testing.T) {
	path := testConfig(t).Warehouse.DuckDB
	release, err := Warehouses{}.LockForRun(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockForRestore(path); !errors.Is(err, ErrWarehouseBusy) {
		t.Errorf("restore under a run: %v, want ErrWarehouseBusy", err)
	}
	release()
	unlock, err := LockForRestore(path)
	if err != nil {
		t.Fatalf("restore after the run released: %v", err)
	}
	if _, err := (Warehouses{}).LockForRun(path); !errors.Is(err, ErrWarehouseBusy) {
		t.Errorf("run under a restore: %v, want ErrWarehouseBusy", err)
	}
	unlock()
}
