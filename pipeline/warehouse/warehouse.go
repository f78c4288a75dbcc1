// Package warehouse is the DuckDB + Parquet adapter of sitewatch: it lands raw API responses,
// flattens them through Arrow into the contract tables (sql/migrations), replaces a
// (snapshot, domain) as one unit, exports Hive-partitioned Parquet by staging and rename, and
// rebuilds everything from the stored raw responses without calling the API.
package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/marcboeker/go-duckdb"

	"sitewatch/pipeline/model"
	"sitewatch/schema/flatten"
)

// ErrLocked reports that another process holds the DuckDB file. The wrapping error names the
// holder and the way out.
var ErrLocked = errors.New("warehouse file is locked by another process")

// Options configure Open.
type Options struct {
	DuckDBPath string // the DuckDB file; parent directories are created
	ParquetDir string // root of the Parquet tree; "" disables ExportParquet
	Logger     *slog.Logger
	// ReadOnly opens the file with access_mode=read_only: no migrations, no writes, and other
	// read-only processes may share it (but no writer can open it meanwhile).
	ReadOnly bool
	// Allocator is used for the Arrow batches (nil: memory.DefaultAllocator). Tests pass a
	// memory.CheckedAllocator.
	Allocator memory.Allocator
	// BatchDomains bounds the domains per Arrow batch on the bulk path (Rebuild); 0 = 1000.
	BatchDomains int
	// MemoryLimit is DuckDB's memory_limit, e.g. "256MB". "" = DefaultMemoryLimit for a
	// writer, DefaultReadMemoryLimit for a reader.
	MemoryLimit string
	// MaxSpill is a reader's max_temp_directory_size ("" = readerMaxSpill of the file): what
	// a read may spill before it fails with an error instead of filling the disk.
	MaxSpill string
	// BulkMemoryLimit is DuckDB's memory_limit while Rebuild runs ("" = DefaultBulkMemoryLimit).
	// DuckDB otherwise keeps the blocks it reads and writes cached up to MemoryLimit, so a
	// rebuild's peak memory would grow with the warehouse; beyond the limit it evicts cached
	// blocks and spills to <file>.tmp/.
	BulkMemoryLimit string
	// LoadMemoryLimit is DuckDB's memory_limit of a writer outside Rebuild ("" =
	// DefaultLoadMemoryLimit): while answers load, and for the quality checks and the Parquet
	// export. DuckDB keeps every block a load writes cached up to its limit, so a run's memory
	// would otherwise grow with the watchlist up to MemoryLimit; beyond it blocks are evicted
	// or spilled to <file>.tmp/. A writer therefore runs under LoadMemoryLimit or
	// BulkMemoryLimit, never MemoryLimit, which applies to a read-only open.
	LoadMemoryLimit string
	// BatchWindow bounds how long an answer Store accepted waits before its commit starts
	// (0 = DefaultBatchWindow): what a kill -9 can lose beyond the calls in flight.
	BatchWindow time.Duration
	// BatchAnswers starts a commit before the window ends once this many answers are pending
	// (0 = DefaultBatchAnswers).
	BatchAnswers int
	// AttentionLists are the needs-attention settings whose whole lists a writer stores per
	// complete month (attention_lists), besides the view's defaults: the config's
	// attention.min_visits and attention.threshold, so `changes`, `show` and the report read
	// them stored. A zero field means its default.
	AttentionLists []AttentionListSettings
	// DiscoverFloors are the size floors (discover.min_visits; 0: none) whose worth-tracking
	// list a writer stores besides DefaultDiscoverFloor's (changes_cached_candidates).
	DiscoverFloors []int64
}

// AttentionListSettings are the two settings of a needs-attention list (config attention.*).
type AttentionListSettings struct {
	MinVisits int64   // size floor; 0 = 10,000
	Threshold float64 // |z| a move must reach; 0 = 3
}

// DefaultMemoryLimit is DuckDB's memory_limit for a writer unless Options.MemoryLimit is set
// (the default of config warehouse.memory_limit).
const DefaultMemoryLimit = "256MB"

// DefaultReadMemoryLimit is DuckDB's memory_limit of a read-only open (report, changes,
// show, discover, query, status) unless Options.MemoryLimit is set. Before, a reader ran at
// DuckDB's default, 80% of the machine's memory, and kept every block it read cached: at
// 100,000 domains `discover` peaked at 688 MB and a count of needs_attention at 711 MB
// (issue 44: each ≤ 600 MB). Beyond the limit DuckDB evicts cached blocks and spills to the
// reader's own directory (readerSpillDir); the process adds ~140 MB of its own (Go heap,
// code, DuckDB's allocations outside its buffer pool).
const DefaultReadMemoryLimit = "384MB"

// DefaultLoadMemoryLimit is DuckDB's memory_limit while answers load unless
// Options.LoadMemoryLimit is set (config warehouse.memory_limit). Lower limits keep RSS lower
// but make DuckDB spill to <file>.tmp/, and DuckDB 1.1.2 aborts the process when such a spill
// write fails on a full disk (measured: 40MB aborted the disk-full test, 64MB did not).
const DefaultLoadMemoryLimit = "128MB"

// DefaultBulkMemoryLimit is DuckDB's memory_limit during Rebuild unless
// Options.BulkMemoryLimit is set.
const DefaultBulkMemoryLimit = "160MB"

var memoryLimitRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*[KMGT]i?B$`)

// Warehouse is an open DuckDB warehouse. Its methods are safe for concurrent use; writes are
// serialized.
type Warehouse struct {
	opts Options
	log  *slog.Logger
	mem  memory.Allocator
	db   *sql.DB

	mu      sync.Mutex     // serializes every write: one transaction at a time on load
	load    *sql.Conn      // the connection every write transaction runs on
	loadCon unsafe.Pointer // its DuckDB C handle, for registerArrowView
	// read is a second connection for streaming raw bodies during a rebuild (under mu).
	read   *sql.Conn
	readAr *duckdb.Arrow
	// spillDir is a read-only open's own temp_directory, removed by Close ("" for a writer).
	spillDir string

	// pmu guards the buffered writes (batch.go). Lock order: mu before pmu.
	pmu       sync.Mutex
	pending   *batch
	spareRows *flatten.Batch
	flushErr  error                           // a background commit's error, for the next Store or Flush
	index     map[string]map[string]pairState // snapshot -> domain -> stored bodies
	waiting   map[domainKey]*pairHalves       // decoded bodies waiting for their partner
	waitOrder []waitEntry                     // waiting's pairs, longest-waiting first (and stale entries)
	waitSeq   uint64                          // the last pairHalves.seq given
	halves    int                             // decoded bodies held in waiting
	maxHalves int                             // bound of halves (defaultMaxHalves)
	runRefs   runRefs                         // the run_ids of index
	onCommit  func(LogRows)                   // told what each commit wrote (answerlog.go)

	wake, full, stop chan struct{}
	flusherDone      chan struct{}

	abandoned []model.RunRecord // runs this Open closed as abandoned

	bulk         atomic.Bool   // Rebuild runs: its checks and export keep BulkMemoryLimit
	cachesFresh  atomic.Bool   // cache_state.fresh as this writer last wrote or read it (cachestate.go)
	dataWrites   atomic.Uint64 // data-changing commits of this writer
	largest      monthCount    // largestMonth's count, kept until the next data commit (memscale.go)
	listsCurrent string        // a reader's: the settings its file's lists mark names current (listsmark.go)
	// a writer's: the file is as the last writer left it with its lists fresh (no other program wrote since)
	unchangedSinceMark bool
	freshFile          fileState    // a writer's: the file and WAL right after its last refresh (noteFreshFile; under mu)
	lastReleased       atomic.Int64 // unix nanoseconds of releaseNative's last release
	memoryLimit        string       // DuckDB's memory_limit as this Warehouse last set it (under mu; setMemoryLimit)
	threads            threadFit    // DuckDB's threads as fitThreads last set them (under mu; threads.go)
}

// Open creates parent directories, opens DuckDB (read-write holds the file lock), applies
// Migrate, and removes Parquet staging leftovers of a crashed export. When another process
// holds the file it returns an error wrapping ErrLocked that names the holder and what to do.
func Open(ctx context.Context, opts Options) (*Warehouse, error) {
	if opts.DuckDBPath == "" {
		return nil, errors.New("open warehouse: warehouse.duckdb is empty: set the DuckDB file path in the config")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if opts.BatchDomains <= 0 {
		opts.BatchDomains = 1000
	}
	if opts.BatchWindow <= 0 {
		opts.BatchWindow = DefaultBatchWindow
	}
	if opts.BatchAnswers <= 0 {
		opts.BatchAnswers = DefaultBatchAnswers
	}
	switch {
	case opts.MemoryLimit != "":
	case opts.ReadOnly:
		opts.MemoryLimit = DefaultReadMemoryLimit
	default:
		opts.MemoryLimit = DefaultMemoryLimit
	}
	w := &Warehouse{opts: opts, log: opts.Logger, mem: opts.Allocator}
	if w.mem == nil {
		w.mem = memory.DefaultAllocator
	}
	if !opts.ReadOnly {
		if err := checkWritable(opts); err != nil {
			return nil, fmt.Errorf("open warehouse: %w", err)
		}
	} else if _, err := os.Stat(opts.DuckDBPath); err != nil {
		return nil, fmt.Errorf("open warehouse %s read-only: %w (run `sitewatch run` first to create it)", opts.DuckDBPath, err)
	}
	if opts.BulkMemoryLimit == "" {
		opts.BulkMemoryLimit = DefaultBulkMemoryLimit
	}
	if opts.LoadMemoryLimit == "" {
		opts.LoadMemoryLimit = DefaultLoadMemoryLimit
	}
	for _, l := range []string{opts.MemoryLimit, opts.BulkMemoryLimit, opts.LoadMemoryLimit, opts.MaxSpill} {
		if l != "" && !memoryLimitRE.MatchString(l) {
			return nil, fmt.Errorf("open warehouse: memory limit %q is not a size like 512MB or 2GB", l)
		}
	}
	w.opts = opts
	params := url.Values{}
	w.memoryLimit = opts.MemoryLimit
	if !opts.ReadOnly {
		w.memoryLimit = opts.LoadMemoryLimit
	}
	params.Set("memory_limit", w.memoryLimit)
	removeDeadSpillDirs(opts.DuckDBPath, w.log) // a killed run's readers' (every open: the next is often a writer's)
	if opts.ReadOnly {
		params.Set("access_mode", "read_only")
		w.spillDir = readerSpillDir(opts.DuckDBPath, w.log)
		if w.spillDir != "" {
			params.Set("temp_directory", w.spillDir)
		}
		if opts.MaxSpill == "" {
			opts.MaxSpill = readerMaxSpill(opts.DuckDBPath)
		}
		params.Set("max_temp_directory_size", opts.MaxSpill)
	}
	dsn := opts.DuckDBPath
	if len(params) > 0 {
		dsn += "?" + params.Encode()
	}
	db, err := sql.Open("duckdb", dsn)
	if err == nil {
		err = db.PingContext(ctx)
		if err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		if w.spillDir != "" {
			_ = os.RemoveAll(w.spillDir) // nothing opened: a refused reader (a writer holds the file) leaves no directory
		}
		return nil, fmt.Errorf("open warehouse %s: %w", opts.DuckDBPath, lockError(opts.DuckDBPath, err))
	}
	w.db = db
	// Under the file's lock (shared for a reader, exclusive for a writer): no one else writes now.
	if opts.ReadOnly {
		w.listsCurrent = readListsMark(opts.DuckDBPath)
	} else {
		w.unchangedSinceMark = readListsMark(opts.DuckDBPath) != ""
		if err := removeListsMark(opts.DuckDBPath); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("open warehouse %s: remove the stored lists' mark: %w (check the directory's permissions)", opts.DuckDBPath, err)
		}
	}
	if !opts.ReadOnly {
		changed, err := migrate(ctx, db)
		if err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("open warehouse %s: %w", opts.DuckDBPath, err)
		}
		w.unchangedSinceMark = w.unchangedSinceMark && !changed // a migration may change rows no commit of ours did
	}
	if err := w.openLoadConn(ctx); err != nil {
		_ = w.Close() // the open error is the one to report
		return nil, fmt.Errorf("open warehouse %s: %w", opts.DuckDBPath, err)
	}
	if err := w.readDefaultThreads(ctx); err != nil {
		_ = w.Close() // the open error is the one to report
		return nil, fmt.Errorf("open warehouse %s: %w", opts.DuckDBPath, err)
	}
	w.fitThreads(ctx)
	if opts.ReadOnly {
		w.scaleReadLimit(ctx)
		return w, nil
	}
	if opts.ParquetDir != "" {
		if err := cleanStaging(opts.ParquetDir, w.log); err != nil {
			_ = w.Close() // the open error is the one to report
			return nil, fmt.Errorf("open warehouse: %w", err)
		}
	}
	w.startWriter()
	if w.abandoned, err = w.closeAbandoned(ctx); err != nil {
		_ = w.Close() // the open error is the one to report
		return nil, fmt.Errorf("open warehouse %s: close the runs of dead processes: %w", opts.DuckDBPath, err)
	}
	if err := w.readCacheState(ctx); err != nil {
		_ = w.Close() // the open error is the one to report
		return nil, fmt.Errorf("open warehouse %s: %w", opts.DuckDBPath, err)
	}
	if w.cachesFresh.Load() {
		w.noteFreshFile() // as the last writer left it: this one's Close may mark it again
	} else {
		w.refreshStoredLists(ctx) // the last writer wrote after its refresh (killed, upgraded, restored)
	}
	return w, nil
}

// startWriter sets up the buffered writes and starts the background flusher.
func (w *Warehouse) startWriter() {
	w.pending = newBatch(flatten.NewBatch(w.mem))
	w.index = map[string]map[string]pairState{}
	w.waiting = map[domainKey]*pairHalves{}
	w.maxHalves = defaultMaxHalves
	w.wake, w.full, w.stop = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
	w.flusherDone = make(chan struct{})
	go w.flusher()
}

func (w *Warehouse) openLoadConn(ctx context.Context) error {
	var err error
	if w.load, err = w.db.Conn(ctx); err != nil {
		return fmt.Errorf("load connection: %w", err)
	}
	err = onDriverConn(w.load, func(c driver.Conn) (err error) {
		w.loadCon, err = duckdbConn(c)
		return err
	})
	if err != nil {
		return fmt.Errorf("load connection: %w", err)
	}
	if w.read, w.readAr, err = w.arrowConn(ctx); err != nil {
		return fmt.Errorf("read connection: %w", err)
	}
	return nil
}

// arrowConn takes a dedicated connection from the pool with its Arrow interface.
func (w *Warehouse) arrowConn(ctx context.Context) (*sql.Conn, *duckdb.Arrow, error) {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	var ar *duckdb.Arrow
	err = onDriverConn(conn, func(c driver.Conn) (err error) {
		ar, err = duckdb.NewArrowFromConn(c)
		return err
	})
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("arrow interface: %w", err)
	}
	return conn, ar, nil
}

// onDriverConn runs fn on conn's go-duckdb driver connection.
func onDriverConn(conn *sql.Conn, fn func(driver.Conn) error) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, not a driver.Conn", dc)
		}
		return fn(c)
	})
}

// Close commits what Store accepted, checkpoints the database (so its write-ahead log is
// folded into the file) and closes it, releasing the file lock. It returns every failure of
// those steps, naming what failed: a failed checkpoint leaves the committed data in the WAL,
// which the next Open replays.
func (w *Warehouse) Close() error {
	var errs []error
	if w.stop != nil {
		close(w.stop)
		<-w.flusherDone
		w.stop = nil
		errs = append(errs, w.Flush(context.Background()))
		if w.load != nil {
			unchanged := w.unchangedSinceFresh()
			if _, err := w.load.ExecContext(context.Background(), `CHECKPOINT`); err != nil {
				errs = append(errs, fmt.Errorf("checkpoint: %w", diskError(w.opts.DuckDBPath, err)))
			} else if errors.Join(errs...) == nil && unchanged {
				w.writeListsMark() // still holding the file: no other writer between the mark and us
			}
		}
		w.pmu.Lock()
		if w.pending != nil {
			w.pending.rows.Release()
			w.pending = nil
		}
		if w.spareRows != nil {
			w.spareRows.Release()
			w.spareRows = nil
		}
		w.pmu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range []**sql.Conn{&w.load, &w.read} {
		if *c != nil {
			errs = append(errs, (*c).Close())
			*c = nil
		}
	}
	if w.db != nil {
		errs = append(errs, w.db.Close())
		w.db = nil
		releaseNativeMemory() // what DuckDB freed; a schedule process idles after this
	}
	if w.spillDir != "" {
		errs = append(errs, os.RemoveAll(w.spillDir))
		w.spillDir = ""
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close warehouse %s: %w", w.opts.DuckDBPath, err)
	}
	return nil
}

// readerSpillDir makes a directory of its own for a read-only open to spill to, beside the
// file (hidden). Readers share DuckDB's default <file>.tmp/ and its file names: two readers
// spilling at once (changes beside a report, under the 256 MB read limit) deleted each other's
// spill file and crashed (SIGSEGV, "Could not read enough bytes"; seen under a 256 MB limit at
// 100,000 domains, and possible whenever readers spill). "" (DuckDB's default) when
// the directory cannot be made, e.g. on a read-only share. Its name carries the process ID:
// a reader killed before Close leaves its directory, which the next open (a reader's or a
// writer's) removes once that process is gone (removeDeadSpillDirs).
func readerSpillDir(duckdbPath string, log *slog.Logger) string {
	pattern := spillPrefix(duckdbPath) + strconv.Itoa(os.Getpid()) + "-*.tmp"
	dir, err := os.MkdirTemp(filepath.Dir(duckdbPath), pattern)
	if err == nil {
		return dir
	}
	// A warehouse directory this user cannot write (a shared, read-only copy): the OS's temp
	// directory, never DuckDB's default <file>.tmp/ beside the file, which fails there too.
	dir, terr := os.MkdirTemp("", pattern)
	if terr != nil {
		log.Debug("no spill directory of its own for a reader; DuckDB's default is shared", "err", err, "temp_err", terr)
		return ""
	}
	return dir
}

// minMaxSpill is the least readerMaxSpill gives a reader.
const minMaxSpill = 2 << 30

// readerMaxSpill is what a reader of duckdbPath may spill: four times the file, at least
// minMaxSpill. DuckDB's own default is 90% of the free disk: a read that went wrong (the
// keyword_overlap plan of issue 44 spilled 40 GB) filled the disk, and every other process
// writing there failed with it. A read that needs to spill more than four copies of the
// whole warehouse has gone wrong; it now fails with DuckDB's out-of-memory error instead.
func readerMaxSpill(duckdbPath string) string {
	limit := int64(minMaxSpill)
	if st, err := os.Stat(duckdbPath); err == nil && 4*st.Size() > limit {
		limit = 4 * st.Size()
	}
	return strconv.FormatInt(limit>>20, 10) + "MiB"
}

// spillPrefix is the start of a reader's spill directory's name beside duckdbPath.
func spillPrefix(duckdbPath string) string { return "." + filepath.Base(duckdbPath) + ".read-" }

// removeDeadSpillDirs removes the spill directories of readers whose process is gone (killed
// before Close: a `sitewatch run` killed with kill -9 left one per kill). A live process's
// directory, or one whose name carries no process ID, is left alone.
func removeDeadSpillDirs(duckdbPath string, log *slog.Logger) {
	prefix := spillPrefix(duckdbPath)
	found, _ := filepath.Glob(filepath.Join(filepath.Dir(duckdbPath), prefix+"*.tmp"))
	for _, dir := range found {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Debug("could not remove a dead reader's spill directory", "dir", dir, "err", err)
		}
	}
}

// processAlive says whether a process with ID pid exists (signal 0 reaches it, or it exists
// but belongs to another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// DB is the underlying database, for queries; it commits what Store accepted first, so the
// caller reads its own writes. Write through the Warehouse methods.
func (w *Warehouse) DB() *sql.DB {
	w.flushQuietly()
	return w.db
}

var lockHolder = regexp.MustCompile(`Conflicting lock is held in (.*?) \(PID (\d+)\)`)

// lockError translates DuckDB's lock conflict into an error wrapping ErrLocked that says who
// holds the file and what to do; other errors are returned unchanged.
func lockError(path string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Read-only file system"):
		return fmt.Errorf("%w: this user cannot write %s or its directory; fix the permissions, or point warehouse.duckdb at a writable path", err, path)
	case strings.Contains(msg, "No space left"), strings.Contains(msg, "File too large"):
		return fmt.Errorf("%w: free disk space for %s (or raise the file size limit), then rerun; nothing committed is lost", err, path)
	}
	if !strings.Contains(msg, "Could not set lock") && !strings.Contains(msg, "Conflicting lock") {
		return err
	}
	holder, pid := "another process", 0
	if m := lockHolder.FindStringSubmatch(msg); m != nil {
		holder = m[1]
		pid, _ = strconv.Atoi(m[2])
	}
	who := fmt.Sprintf("%s (PID %d)", holder, pid)
	if pid == 0 {
		who = holder
	}
	var likely, way string
	if isSitewatch(holder, pid) {
		likely = "probably another sitewatch run or command (a scheduled run, or a `sitewatch query` still open)"
		way = fmt.Sprintf("wait for it to finish or stop it (kill %d), then retry", pid)
	} else {
		likely = "probably a tool holding the file open (a BI tool, the duckdb CLI, a notebook)"
		way = "close it in that tool, then retry; BI tools should read the Parquet tree, or a copy of the DuckDB file, never the live file"
	}
	err = fmt.Errorf("%w: %s holds %s, %s; %s", ErrLocked, who, path, likely, way)
	if isSitewatch(holder, pid) {
		return sitewatchHold{err}
	}
	return err
}

// ErrHeldBySitewatch is matched (errors.Is) by a lock error whose holder is a sitewatch
// process: a command such as publish or status that holds the file for seconds, worth
// waiting for, unlike a BI tool that holds it for hours.
var ErrHeldBySitewatch = errors.New("held by a sitewatch process")

type sitewatchHold struct{ error }

func (h sitewatchHold) Unwrap() error      { return h.error }
func (sitewatchHold) Is(target error) bool { return target == ErrHeldBySitewatch }

// isSitewatch guesses whether the holder is a sitewatch process (or this very binary, e.g. a
// test) from its executable path and /proc.
func isSitewatch(holder string, pid int) bool {
	names := []string{filepath.Base(holder)}
	if pid > 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			names = append(names, strings.TrimSpace(string(b)))
		}
	}
	self, _ := os.Executable()
	for _, n := range names {
		if strings.Contains(n, "sitewatch") || (self != "" && n == filepath.Base(self)) {
			return true
		}
	}
	return self != "" && holder == self
}
