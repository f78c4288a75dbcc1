package livestatus

import (
	"log/slog"
	"sync"
	"time"

	"sitewatch/pipeline/atomicfile"
)

// DefaultEvery is how often a Keeper refreshes the file.
const DefaultEvery = time.Second

// Keeper refreshes a progress file while a run is in progress. A nil *Keeper does nothing,
// so a caller without a file needs no checks.
type Keeper struct {
	path     string
	snapshot func() Status
	log      *slog.Logger
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	warned   bool
}

// Start writes snapshot() to path now and then every `every` (DefaultEvery when 0) until
// Finish. snapshot is called from the Keeper's goroutine and must be safe for that; Start
// fills State (running), UpdatedAt, PID and Host. A failing write is logged once and does not
// stop the run: the file is an aid to watching, not part of the data.
func Start(path string, every time.Duration, snapshot func() Status, logger *slog.Logger) *Keeper {
	if every <= 0 {
		every = DefaultEvery
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	k := &Keeper{path: path, snapshot: snapshot, log: logger, done: make(chan struct{})}
	// Only the run holding the warehouse writes the file: no other write is in flight.
	if err := atomicfile.RemoveLeftovers(path); err != nil {
		logger.Warn("live status: a leftover of an interrupted write stays", "err", err)
	}
	_ = k.write(StateRunning, Status{}) // logged by write
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-k.done:
				return
			case <-t.C:
				_ = k.write(StateRunning, Status{}) // logged by write
			}
		}
	}()
	return k
}

// Finish stops the refreshes and writes snapshot() a last time with State final, the run's
// outcome (a runs.status value) and message (the first error, or "") and no ETA. It returns
// the write's error (also logged). Calls after the first do nothing.
func (k *Keeper) Finish(outcome, message string) error {
	if k == nil {
		return nil
	}
	var err error
	k.once.Do(func() {
		close(k.done)
		k.wg.Wait()
		final := k.snapshot()
		final.Outcome, final.Message, final.ETASeconds = outcome, message, nil
		err = k.write(StateFinal, final)
	})
	return err
}

// write writes s (snapshot() when running) with state.
func (k *Keeper) write(state string, s Status) error {
	if state == StateRunning {
		s = k.snapshot()
	}
	s.State = state
	s.UpdatedAt = time.Now().UTC()
	err := Write(k.path, s)
	if err != nil && !k.warned {
		k.warned = true // one warning per run: a full disk must not flood the log
		k.log.Warn("cannot write the live progress file; `sitewatch status` will not show this run", "path", k.path, "err", err)
	}
	return err
}
