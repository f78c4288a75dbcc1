// Package iceberg publishes the months of the local Parquet tree as Apache Iceberg tables
// (format v2) in the bucket of publish.url, registered in a catalog that engines share: the
// SQL catalog on PostgreSQL (the schema Java's JdbcCatalog uses, read by Trino, Spark and
// Flink) or a REST catalog. Each table is partitioned by snapshot_month; publishing a month is
// one commit per table that replaces exactly that month's partition, data tables first and
// runs last, so a reader sees a table's old month or its new one, never a mix.
//
// A month's files are hashed; the hash is recorded in the table's properties by the same
// commit, so republishing an unchanged month commits nothing. Snapshots beyond
// publish.keep_snapshots expire, and files no snapshot references (expired ones, and data
// files of a publish killed before its commit) are removed after each commit.
package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/filehash"
)

// CatalogName is the catalog name the tables are registered under in the SQL catalog (its
// catalog_name column): engines reading the same database must use this name.
const CatalogName = "sitewatch"

// DirName is the directory under publish.url that holds the tables:
// <prefix>/iceberg/<namespace>/<table>/{data,metadata}/, apart from the Hive layout.
const DirName = "iceberg"

// Options tune a Publisher; the zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Getenv reads SITEWATCH_CATALOG_PASSWORD (default os.Getenv).
	Getenv func(string) string
	// OrphanMinAge is how old an unreferenced file must be before it is removed (default 0:
	// one writer per bucket, so any unreferenced file is a leftover, never a write in flight).
	OrphanMinAge time.Duration
	// ReadOnly leaves a missing namespace missing (sitewatch status only reads the catalog).
	ReadOnly bool
}

// Publisher writes months as Iceberg tables. Close it when done.
type Publisher struct {
	cat  catalog.Catalog
	ns   table.Identifier
	root string // s3://bucket/prefix/iceberg/<namespace>
	keep int
	log  *slog.Logger
	opts Options
}

// TableResult is what publishing one table's month did.
type TableResult struct {
	Table     string
	Rows      int64
	Committed bool  // false: the month was already published as it is
	Snapshot  int64 // the table's current snapshot after the publish
	Expired   int   // snapshots expired by this commit
	Removed   int   // unreferenced files removed after it
}

// Result is what publishing one month did.
type Result struct {
	Month    string
	Tables   []TableResult
	Duration time.Duration
}

// Commits counts the tables committed.
func (r Result) Commits() int {
	n := 0
	for _, t := range r.Tables {
		if t.Committed {
			n++
		}
	}
	return n
}

// Rows counts the month's rows over every table.
func (r Result) Rows() int64 {
	var n int64
	for _, t := range r.Tables {
		n += t.Rows
	}
	return n
}

// New connects to the catalog of cfg (creating the namespace when missing). It fails when
// cfg does not write Iceberg, the catalog is unreachable or refuses the password.
func New(ctx context.Context, cfg config.PublishConfig, opts Options) (*Publisher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	loc, err := publish.ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if !cfg.WritesIceberg() {
		return nil, fmt.Errorf("publish.format is %q: set it to iceberg or both to publish Iceberg tables", cfg.Format)
	}
	keep := cfg.KeepSnapshots
	if keep <= 0 {
		keep = config.DefaultKeepSnapshots
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = config.DefaultNamespace
	}
	cat, err := openCatalog(ctx, cfg, opts.getenv())
	if err != nil {
		return nil, err
	}
	p := &Publisher{cat: cat, ns: table.Identifier{ns}, root: loc.URL(DirName + "/" + ns), keep: keep, log: opts.Logger, opts: opts}
	if opts.ReadOnly {
		return p, nil
	}
	if err := p.ensureNamespace(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

func (o Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return osGetenv
}

// Close releases the catalog's connections.
func (p *Publisher) Close() error {
	if c, ok := p.cat.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (p *Publisher) ensureNamespace(ctx context.Context) error {
	err := p.cat.CreateNamespace(ctx, p.ns, nil)
	if err == nil || errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil
	}
	return fmt.Errorf("iceberg: create namespace %s in the catalog: %w", p.ns[0], err)
}

// Month publishes month of the Parquet tree at parquetRoot: one commit per table whose files
// changed since the last publish (the month's partitioned tables in name order, then the
// whole tables such as countries, then fetch_errors and quality_checks, runs last). It stops
// at the first table that fails; tables committed before it stay committed, and a rerun
// completes the month. Errors wrap publish.ErrNoMonth when the tree has no such month.
func (p *Publisher) Month(ctx context.Context, parquetRoot, month string) (Result, error) {
	start := time.Now()
	res := Result{Month: month}
	sources, err := monthSources(parquetRoot, month)
	if err != nil {
		return res, err
	}
	defer boundGoMemory()() // memory.go: the commits' garbage is collected near a limit
	sums := filehash.Open(parquetRoot)
	defer p.saveSums(sums)
	for _, src := range sources {
		tr, err := p.publishTable(ctx, src, sums)
		if err != nil {
			return res, fmt.Errorf("iceberg: publish %s of %s: %w", src.table, month, err)
		}
		res.Tables = append(res.Tables, tr)
	}
	res.Duration = time.Since(start)
	p.log.Info("published iceberg", "month", month, "tables", len(res.Tables), "commits", res.Commits(),
		"rows", res.Rows(), "took", res.Duration.Round(time.Millisecond))
	return res, nil
}

// All publishes every month of the tree, oldest first, stopping at the first failure.
func (p *Publisher) All(ctx context.Context, parquetRoot string) ([]Result, error) {
	months, err := publish.Months(parquetRoot)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, m := range months {
		res, err := p.Month(ctx, parquetRoot, m)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// saveSums writes sums back; a failure costs the next publish one read of the files.
func (p *Publisher) saveSums(sums *filehash.Cache) {
	if err := sums.Save(); err != nil {
		p.log.Warn("could not save the sums of the Parquet files: the next publish reads them again", "file", filehash.File, "err", err)
	}
}

// Tables lists the tables of the namespace, sorted.
func (p *Publisher) Tables(ctx context.Context) ([]string, error) {
	var names []string
	for id, err := range p.cat.ListTables(ctx, p.ns) {
		if err != nil {
			return nil, fmt.Errorf("iceberg: list the tables of %s: %w", p.ns[0], err)
		}
		names = append(names, id[len(id)-1])
	}
	slices.Sort(names)
	return names, nil
}

// Load returns the table name of the namespace.
func (p *Publisher) Load(ctx context.Context, name string) (*table.Table, error) {
	return p.cat.LoadTable(ctx, append(slices.Clone(p.ns), name))
}
