package publish

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Mismatch is one published object that differs from its manifest.
type Mismatch struct {
	Manifest string // the manifest's key
	Key      string
	Problem  string
}

func (m Mismatch) String() string { return m.Key + ": " + m.Problem }

// Verify reads every manifest of the bucket and checks each object it lists against the
// object's own checksums (its sitewatch-sha256 metadata and the SHA-256 the service stored),
// with one HEAD per object; it returns every mismatch (missing, other size, other checksum,
// no checksum to compare). `sitewatch publish` re-uploads each of them.
func (p *Publisher) Verify(ctx context.Context) (checked int, bad []Mismatch, err error) {
	ms, err := p.Manifests(ctx)
	if err != nil {
		return 0, nil, err
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for _, m := range ms {
		for _, f := range m.Files {
			g.Go(func() error {
				problem, err := p.check(gctx, f)
				mu.Lock()
				defer mu.Unlock()
				checked++
				if problem != "" {
					bad = append(bad, Mismatch{Manifest: ManifestKey(m.SnapshotMonth), Key: f.Key, Problem: problem})
				}
				return err
			})
		}
	}
	return checked, bad, g.Wait()
}

// check returns what is wrong with the published object of f ("" when it matches).
func (p *Publisher) check(ctx context.Context, f ManifestFile) (string, error) {
	h, err := p.head(ctx, f.Key)
	if err != nil || !h.found {
		return "missing", err
	}
	return h.differs(f), nil
}

// differs compares an object's HEAD with its manifest entry.
func (h remoteObject) differs(f ManifestFile) string {
	switch {
	case h.size != f.Size:
		return fmt.Sprintf("%d bytes, the manifest says %d", h.size, f.Size)
	case h.sum == "" && h.s3sum == "":
		return "carries no checksum to compare (written by another tool)"
	case h.sum != "" && h.sum != f.SHA256:
		return fmt.Sprintf("SHA-256 %s, the manifest says %s", h.sum, f.SHA256)
	case h.s3sum != "" && f.S3ChecksumSHA256 != "" && h.s3sum != f.S3ChecksumSHA256:
		return fmt.Sprintf("the service's checksum is %s, the manifest says %s (replaced by other bytes)", h.s3sum, f.S3ChecksumSHA256)
	}
	return ""
}
