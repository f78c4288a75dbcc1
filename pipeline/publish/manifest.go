package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ManifestFormat is the version of the manifest layout.
const ManifestFormat = 1

// Manifest describes one published month: every object a reader of that month should see. It
// is written after every data object of the month, so when it exists its objects were complete
// (until a later publish of the same month replaces them, and then it).
type Manifest struct {
	Format        int    `json:"format"`
	SnapshotMonth string `json:"snapshot_month"` // "" in the shared manifest
	RunID         string `json:"run_id"`
	// Runs are every run the version's ledger holds (the run_id values of its runs and
	// run_calls objects), sorted: RunID names only the run that completed the month, while an
	// up-to-date run's probe or another machine's pulled runs are in the ledger too. A writer
	// must hold all of them (Options.GuardRuns), and a sync pulls a version naming one it
	// lacks. Empty in manifests written before it existed (RunID alone then).
	Runs []string `json:"runs,omitempty"`
	// SchemaVersion is the newest migration of the warehouse that wrote the objects: a
	// restore refuses a bucket newer than its build.
	SchemaVersion    string         `json:"schema_version,omitempty"`
	SitewatchVersion string         `json:"sitewatch_version"`
	PublishedAt      time.Time      `json:"published_at"`
	Files            []ManifestFile `json:"files"`

	// Key is where the manifest was read from (relative to its publisher's prefix) and ETag
	// the version read: a write over it names that version (If-Match), and a sync compares it
	// with what the warehouse last took. Neither is part of the JSON.
	Key  string `json:"-"`
	ETag string `json:"-"`
}

// ManifestFile is one data object of a manifest. Key is relative to the publish prefix;
// SHA256 is the hex SHA-256 of the whole object; S3ChecksumSHA256 is the checksum the server
// verified and stored (base64; "…-N" for a multipart object: the checksum of its N part
// checksums).
type ManifestFile struct {
	Key              string `json:"key"`
	Table            string `json:"table"`
	Rows             int64  `json:"rows"`
	Size             int64  `json:"size"`
	SHA256           string `json:"sha256"`
	S3ChecksumSHA256 string `json:"s3_checksum_sha256,omitempty"`
}

// file returns the entry of key, or nil.
func (m *Manifest) file(key string) *ManifestFile {
	if m == nil {
		return nil
	}
	for i := range m.Files {
		if m.Files[i].Key == key {
			return &m.Files[i]
		}
	}
	return nil
}

// sameContent reports whether m and o describe the same objects of the same run and version:
// publishing o over m would change nothing a reader can see.
func (m *Manifest) sameContent(o *Manifest) bool {
	if m == nil || o == nil {
		return false
	}
	// SitewatchVersion is left out: it names the build that wrote these objects, and a newer
	// build finding them identical has nothing to write (a republish sends no PUT).
	return m.Format == o.Format && m.SnapshotMonth == o.SnapshotMonth && m.RunID == o.RunID && m.SchemaVersion == o.SchemaVersion &&
		slices.Equal(m.Runs, o.Runs) && slices.Equal(m.Files, o.Files)
}

// AllRuns returns every run m names: Runs and RunID (a manifest older than Runs names only
// RunID).
func (m *Manifest) AllRuns() []string {
	all := slices.Clone(m.Runs)
	if m.RunID != "" && !slices.Contains(all, m.RunID) {
		all = append(all, m.RunID)
	}
	return all
}

func (m *Manifest) marshal() ([]byte, error) { return json.MarshalIndent(m, "", "  ") }

// manifestDir is the folder of the manifests under the prefix (and under RestoreCopyDir).
const manifestDir = "_manifests"

// ManifestMonth says whether rel (a key under the prefix, or under RestoreCopyDir) names a
// manifest, and of which month ("" for the shared tables'). Only
// _manifests/snapshot_month=YYYY-MM.json and _manifests/shared.json are manifests: anything
// else in the folder (a user's note, an editor's backup) is not sitewatch's.
func ManifestMonth(rel string) (month string, ok bool) {
	dir, name := path.Split(rel)
	if dir != manifestDir+"/" {
		return "", false
	}
	if rel == sharedManifestRel {
		return "", true
	}
	m, found := strings.CutPrefix(strings.TrimSuffix(name, ".json"), partitionPrefix)
	if !found || !strings.HasSuffix(name, ".json") || !monthRE.MatchString(m) {
		return "", false
	}
	return m, true
}

// validate refuses a manifest that disagrees with the key it was read from: a month
// manifest whose snapshot_month is not its name's, or an object that is not a Parquet file
// of that month's partition (of the shared tables: a whole table's file), or a table that is
// not the key's first folder. Loading such a manifest would put rows under the wrong month.
func (m *Manifest) validate(url, month string) error {
	if m.SnapshotMonth != month {
		return fmt.Errorf("%w: manifest %s says snapshot_month %q, its name says %q: refused (republish that month from the machine that holds the warehouse)",
			ErrDamaged, url, m.SnapshotMonth, month)
	}
	for _, f := range m.Files {
		if problem := fileProblem(f, month); problem != "" {
			return fmt.Errorf("%w: manifest %s lists %q, %s: refused (republish that month from the machine that holds the warehouse)", ErrDamaged, url, f.Key, problem)
		}
	}
	return nil
}

// fileProblem says what is wrong with f as an object of month's manifest ("" when nothing).
func fileProblem(f ManifestFile, month string) string {
	parts := strings.Split(f.Key, "/")
	want := 2 // <table>/<file>.parquet
	if month != "" {
		want = 3 // <table>/snapshot_month=M/<file>.parquet
	}
	switch {
	case len(parts) != want || !isParquet(parts[len(parts)-1]) || hidden(parts[0]):
		return "which is not a Parquet file of a table's folder"
	case parts[0] != f.Table:
		return fmt.Sprintf("whose table is %q, not its folder's", f.Table)
	case month != "" && parts[1] != partitionPrefix+month:
		return "which lies in another month's partition"
	}
	return ""
}

// DuplicateError names an object key that two manifest entries list: loading both would
// double its rows, so nothing is loaded.
type DuplicateError struct {
	Key         string
	First, Then string // the manifests' URLs (the same one when it lists the key twice)
}

func (e *DuplicateError) Error() string {
	where := "twice in " + e.First
	if e.First != e.Then {
		where = "in " + e.First + " and in " + e.Then
	}
	return fmt.Sprintf("%v: the object %s is listed %s: refused, nothing was loaded (its rows would be loaded twice); "+
		"republish the month from the machine that holds the warehouse (`sitewatch publish --all`)", ErrDamaged, e.Key, where)
}

func (e *DuplicateError) Unwrap() error { return ErrDamaged }

// CheckDuplicates refuses manifests that list one object key twice, within one manifest or
// across them (the keys are where the objects land under the local Parquet tree). url names
// a manifest for the message.
func CheckDuplicates(ms []*Manifest, url func(*Manifest) string) error {
	seen := map[string]*Manifest{}
	for _, m := range ms {
		for _, f := range m.Files {
			if first, dup := seen[f.Key]; dup {
				return &DuplicateError{Key: f.Key, First: url(first), Then: url(m)}
			}
			seen[f.Key] = m
		}
	}
	return nil
}

// readManifestVersion returns the manifest at rel and the ETag of the object: (nil, "") when
// there is none; (nil, etag) when it is unreadable, which a publish rewrites (over that
// version, like any other).
func (p *Publisher) readManifestVersion(ctx context.Context, rel string) (*Manifest, string, error) {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel))})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, "", nil
		}
		return nil, "", p.fail("read manifest", rel, err)
	}
	defer func() { _ = out.Body.Close() }() // read-only: nothing to lose
	etag := aws.ToString(out.ETag)
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", p.fail("read manifest", rel, err)
	}
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		p.log.Warn("published manifest unreadable; a publish rewrites it", "url", p.loc.URL(rel), "err", err)
		return nil, etag, nil
	}
	m.Key, m.ETag = rel, etag
	return &m, etag, nil
}

// writeManifestAt puts m at rel, with the server verifying its SHA-256, only over the version
// this publisher read: If-Match etag, or If-None-Match: * when it read none. A bucket that
// moved on meanwhile (another machine published) is a *StaleError; nothing is overwritten.
func (p *Publisher) writeManifestAt(ctx context.Context, rel string, m *Manifest, etag string) error {
	body, err := m.marshal()
	if err != nil {
		return err
	}
	in := &s3.PutObjectInput{
		Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel)), Body: bytes.NewReader(body),
		ContentType: aws.String("application/json"), ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256: aws.String(base64Sum(body)),
	}
	if etag == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(etag)
	}
	out, err := p.s3.PutObject(ctx, in)
	if err != nil {
		if isPrecondition(err) {
			return &StaleError{URL: p.loc.URL(rel), Month: m.SnapshotMonth, Why: "changed in the bucket while this publish ran (another machine wrote it)"}
		}
		return p.fail("write manifest", rel, err)
	}
	m.Key, m.ETag = rel, aws.ToString(out.ETag)
	return nil
}

// ErrStale: the bucket holds a version of a manifest this machine has not read (another
// machine published after this warehouse last synced): it is not overwritten.
var ErrStale = errors.New("the bucket holds a newer version")

// StaleError is a manifest write refused because the bucket holds a version this machine
// has not taken in: writing would overwrite another machine's month or ledger.
type StaleError struct {
	URL   string
	Month string // "" for the shared tables
	Why   string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%v: %s %s; nothing was overwritten: run `sitewatch run` (it pulls the bucket's months into the warehouse first, 0 credits for what the bucket holds), then publish again",
		ErrStale, e.URL, e.Why)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// ManifestVersion is a manifest as a listing shows it.
type ManifestVersion struct {
	Key   string // relative to the prefix: _manifests/… or _restore/_manifests/…
	Month string
	Copy  bool   // a restore copy's manifest (under RestoreCopyDir)
	ETag  string // without quotes
}

// ManifestVersions lists the manifests of the months and of the restore copies with their
// ETags, in one listing of the prefix's "_" folders (the manifests, the restore copies and
// the lease: a few dozen keys). Files under a _manifests/ folder that are not manifests are
// named in a warning and left out; the shared tables' manifest is left out (their rows come
// with every month's raw answers).
func (p *Publisher) ManifestVersions(ctx context.Context) ([]ManifestVersion, error) {
	out, _, err := p.Listing(ctx)
	return out, err
}

// Listing is ManifestVersions with, from the same listing, the answer log's segments
// (LogDir): a pull that finds nothing new still costs one listing.
func (p *Publisher) Listing(ctx context.Context) ([]ManifestVersion, []LogObject, error) {
	prefix := p.loc.key("_")
	var out []ManifestVersion
	var logs []LogObject
	pages := s3.NewListObjectsV2Paginator(p.s3, &s3.ListObjectsV2Input{Bucket: &p.loc.Bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, nil, p.fail("list", manifestDir+"/", err)
		}
		for _, o := range page.Contents {
			rel := p.loc.relOf(aws.ToString(o.Key))
			v := ManifestVersion{Key: rel, ETag: strings.Trim(aws.ToString(o.ETag), `"`)}
			if lo, ok := logObject(rel, v.ETag); ok {
				logs = append(logs, lo)
				continue
			}
			inCopies, isCopy := strings.CutPrefix(rel, RestoreCopyDir+"/")
			if isCopy {
				rel, v.Copy = inCopies, true
			}
			month, ok := ManifestMonth(rel)
			switch {
			case ok && month != "":
				v.Month = month
				out = append(out, v)
			case !ok && path.Dir(rel) == manifestDir:
				p.log.Warn("ignored: not a sitewatch manifest (only snapshot_month=YYYY-MM.json and shared.json are)", "url", p.loc.URL(v.Key))
			}
		}
	}
	return out, logs, nil
}

// ReadManifest reads and validates the manifest v lists; its Key is then relative to the
// publisher that serves its objects (Source). A manifest gone since the listing is nil.
func (p *Publisher) ReadManifest(ctx context.Context, v ManifestVersion) (*Manifest, error) {
	src := p.Source(v)
	rel := strings.TrimPrefix(v.Key, RestoreCopyDir+"/")
	m, etag, err := src.readManifestVersion(ctx, rel)
	if err != nil || (m == nil && etag == "") {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%w: manifest %s is unreadable (republish from the machine that holds the warehouse)", ErrDamaged, src.loc.URL(rel))
	}
	m.ETag = strings.Trim(m.ETag, `"`)
	if err := m.validate(src.loc.URL(rel), v.Month); err != nil {
		return nil, err
	}
	return m, CheckDuplicates([]*Manifest{m}, src.ManifestURL)
}

// Source is the publisher whose Download serves the objects of v's manifest: p, or its
// restore copies.
func (p *Publisher) Source(v ManifestVersion) *Publisher {
	if v.Copy {
		return p.RestoreCopies()
	}
	return p
}
