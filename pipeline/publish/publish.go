// Package publish uploads the months of the local Parquet tree to S3-compatible object storage
// in the same Hive layout, so engines that read object storage (Trino, Spark, Athena, DuckDB
// httpfs) can query the warehouse. Each (table, month) has deterministic object names that are
// overwritten in place; a manifest per month, written last, lists every object with its rows,
// size and checksums, so republishing an unchanged month uploads nothing and a publish that was
// killed half-way is completed by the next one.
package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path"
	"strings"
	"time"

	"sitewatch/pipeline/buildinfo"
)

// Target is where months are published. *Publisher (S3) is the one implementation; an Iceberg
// table writer, committing each table atomically, is the likely next.
type Target interface {
	// Month publishes month of the Parquet tree at parquetRoot, recording runID.
	Month(ctx context.Context, parquetRoot, month, runID string) (Result, error)
	// All publishes every month of the tree; runIDs maps a month to the run that produced it.
	All(ctx context.Context, parquetRoot string, runIDs map[string]string) ([]Result, error)
	// Pending lists the months of the tree whose published copy is missing or differs.
	Pending(ctx context.Context, parquetRoot string) ([]string, error)
}

var _ Target = (*Publisher)(nil)

// Result is what publishing one month did.
type Result struct {
	Month           string
	Files           int   // data objects of the month (its partitions and the whole tables)
	Rows            int64 // rows in them
	Uploaded        int   // objects uploaded (changed or new)
	UploadedBytes   int64
	Unchanged       int  // objects already published with the same SHA-256
	Deleted         int  // objects a table no longer has
	ManifestWritten bool // false when nothing changed
	ManifestURL     string
	Duration        time.Duration
}

// Options tune a Publisher; the zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Version is the sitewatch version recorded in manifests (default buildinfo.Version(), so
	// every publisher of one binary writes the same manifest and republishing rewrites nothing).
	Version string
	// Concurrency bounds parallel uploads and connections to the endpoint (default 4).
	Concurrency int
	// PartSize is the multipart part size and threshold in bytes (default 16 MiB, minimum 5 MiB).
	PartSize int64
	// MaxAttempts bounds the attempts of each request: 5xx, throttling and connection errors
	// are retried with exponential backoff and jitter (default 5).
	MaxAttempts int
	// MaxBackoff caps the delay between attempts (default 5s).
	MaxBackoff time.Duration
	// Deadlines bound each request (zero fields: DefaultDeadlines).
	Deadlines Deadlines
	// Small makes a Publisher of small objects (the lease, the answer log): SmallDeadlines
	// unless Deadlines are set, and no connection reused after a failed request.
	Small bool
	// GuardRuns refuses to overwrite a month's manifest (or restore copy's) that names a run
	// the local tree's runs partition of that month does not hold: another machine's run this
	// warehouse never took in (a *StaleError). AfterRun, SaveAfterStop and `sitewatch
	// publish` set it.
	GuardRuns bool
	// FoldLogs deletes, once a month's manifest (or its restore copy's) holds the warehouse's
	// rows, the answer log's segments of that month this warehouse holds (merged by a pull,
	// or written by its runs: SyncState.Logs), and no other. Set it only under the lease: a
	// holder's pull may be reading them.
	FoldLogs bool
	// ReadData makes Verify and a publish download and hash every published object instead
	// of trusting its size and checksum metadata (restic's check --read-data): bytes changed
	// in the store under the same metadata are found, and a publish uploads them again.
	ReadData bool
	// After are the formats AfterRun writes after the Hive layout or the restore copy, in
	// order (the wiring passes iceberg.AfterRun); nil writes no other.
	After []MonthHook
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Version == "" {
		o.Version = buildinfo.Version()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.PartSize < 5<<20 {
		o.PartSize = 16 << 20
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Small && o.Deadlines == (Deadlines{}) {
		o.Deadlines = SmallDeadlines
	}
	o.Deadlines = o.Deadlines.withDefaults()
	return o
}

// Location is a parsed publish.url: s3://Bucket/Prefix.
type Location struct {
	Bucket string
	Prefix string // no leading or trailing slash; "" for the bucket's root
}

// ParseURL parses publish.url (s3://bucket or s3://bucket/prefix).
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err == nil && u.User != nil {
		return Location{}, errors.New("publish.url holds credentials: remove them; they come from the AWS chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role)")
	}
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("publish.url %q: write s3://bucket or s3://bucket/prefix (S3-compatible services: set publish.endpoint)", raw)
	}
	return Location{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}, nil
}

// key returns the object key of rel (a slash path under the prefix).
func (l Location) key(rel string) string {
	if l.Prefix == "" {
		return rel
	}
	return l.Prefix + "/" + rel
}

// URL returns s3://bucket/key of rel.
func (l Location) URL(rel string) string { return "s3://" + l.Bucket + "/" + l.key(rel) }

// sharedManifestRel is the manifest of the tables without month partitions (countries): one
// manifest of their own, so a change of a shared table never makes older months look stale.
var sharedManifestRel = path.Join("_manifests", "shared.json")

// manifestRel is where the manifest of month lives under the prefix: outside every table's
// directory, so no engine reads it as data.
func manifestRel(month string) string {
	return path.Join("_manifests", partitionPrefix+month+".json")
}
