package publish

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ErrDamaged: an object of the bucket is missing or differs from its manifest.
var ErrDamaged = errors.New("the bucket differs from its manifest")

// URL returns s3://bucket/key of a key relative to the prefix.
func (p *Publisher) URL(rel string) string { return p.loc.URL(rel) }

// Manifests reads every published manifest: the shared tables' first (when there is one),
// then the months', oldest first. It returns an empty list when nothing was published. Each
// is validated before anything is downloaded (ManifestMonth, validate, CheckDuplicates): a
// manifest that disagrees with its name, or an object two entries list, is an error wrapping
// ErrDamaged naming it. Other files under _manifests/ are not manifests: each is named in a
// warning and ignored.
func (p *Publisher) Manifests(ctx context.Context) ([]*Manifest, error) {
	objs, err := p.list(ctx, manifestDir)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(objs))
	for k := range objs {
		if _, ok := ManifestMonth(k); ok {
			keys = append(keys, k)
			continue
		}
		p.log.Warn("ignored: not a sitewatch manifest (only snapshot_month=YYYY-MM.json and shared.json are)", "url", p.loc.URL(k))
	}
	slices.SortFunc(keys, func(a, b string) int { // shared.json first, then months in order
		if (a == sharedManifestRel) != (b == sharedManifestRel) {
			if a == sharedManifestRel {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var ms []*Manifest
	for _, k := range keys {
		m, err := p.readManifestAt(ctx, k)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%w: manifest %s is unreadable (republish from the machine that holds the warehouse)", ErrDamaged, p.loc.URL(k))
		}
		month, _ := ManifestMonth(k)
		if err := m.validate(p.loc.URL(k), month); err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	if err := CheckDuplicates(ms, p.ManifestURL); err != nil {
		return nil, err
	}
	return ms, nil
}

// ManifestURL is the s3:// address m was read from.
func (p *Publisher) ManifestURL(m *Manifest) string { return p.loc.URL(m.Key) }

// Download writes the object of f to dst, verifying its size and SHA-256 against f while it
// streams: through a hidden staging file in dst's directory, fsynced and renamed, so dst is
// either absent, its old content, or the verified object. A missing or different object is an
// error wrapping ErrDamaged that names it.
func (p *Publisher) Download(ctx context.Context, f ManifestFile, dst string) error {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(f.Key))})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return fmt.Errorf("%w: %s is listed in its manifest but missing", ErrDamaged, p.loc.URL(f.Key))
		}
		return p.fail("download", f.Key, err)
	}
	defer func() { _ = out.Body.Close() }() // read-only
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("download %s: %w", p.loc.URL(f.Key), err)
	}
	// A download killed earlier left its staging file: ours by name, so ours to remove.
	if old, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), StagingPrefix+filepath.Base(dst)+".*.tmp")); len(old) > 0 {
		for _, o := range old {
			_ = os.Remove(o) // best effort: a leftover is hidden from every reader
		}
	}
	stage, err := stagingPath(dst)
	if err != nil {
		return err
	}
	if err := p.streamVerified(out.Body, f, stage); err != nil {
		_ = os.Remove(stage) // best effort; a later restore removes leftovers too
		return err
	}
	if err := os.Rename(stage, dst); err != nil {
		_ = os.Remove(stage) // best effort
		return fmt.Errorf("download %s: %w", p.loc.URL(f.Key), err)
	}
	return syncDir(filepath.Dir(dst))
}

// StagingPrefix starts the names of Download's staging files (hidden: no reader globs them).
const StagingPrefix = ".restore-"

func stagingPath(dst string) (string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dst), StagingPrefix+filepath.Base(dst)+"."+hex.EncodeToString(rnd[:])+".tmp"), nil
}

func (p *Publisher) streamVerified(body io.Reader, f ManifestFile, stage string) error {
	fh, err := os.OpenFile(stage, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("download %s: %w", p.loc.URL(f.Key), err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(fh, h), body)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return p.fail("download", f.Key, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != f.Size || got != f.SHA256 {
		return fmt.Errorf("%w: %s has %d bytes with SHA-256 %s; its manifest says %d bytes, %s (run `sitewatch publish --verify` where the warehouse is, to repair it)",
			ErrDamaged, p.loc.URL(f.Key), n, got, f.Size, f.SHA256)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // read-only: Sync reported what matters
	return d.Sync()
}

// ManifestKey is the key of month's manifest under the prefix ("" for the shared manifest).
func ManifestKey(month string) string {
	if month == "" {
		return sharedManifestRel
	}
	return path.Clean(manifestRel(month))
}
