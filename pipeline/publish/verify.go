package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

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
// with one HEAD per object (and with Options.ReadData a download hashing its bytes); it
// returns every mismatch (missing, other size, other checksum, no checksum to compare, other
// bytes). `sitewatch publish` re-uploads each of them.
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
	if problem := h.differs(f); problem != "" {
		return problem, nil
	}
	same, err := p.sameData(ctx, f.Key, f)
	if err != nil || same {
		return "", err
	}
	return "its bytes differ from its manifest's SHA-256 under the same size and metadata (changed in the store)", nil
}

// sameData says whether the object at rel holds f's bytes: with Options.ReadData it is
// downloaded and hashed (its size and SHA-256 against f's), otherwise its metadata, checked
// by the caller, is trusted.
func (p *Publisher) sameData(ctx context.Context, rel string, f ManifestFile) (bool, error) {
	if !p.opts.ReadData {
		return true, nil
	}
	// The bytes are hashed here: the SDK's own check of the stored checksum would turn the
	// difference this looks for into a read error.
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel))},
		func(o *s3.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired })
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return false, nil
		}
		return false, p.fail("read", rel, err)
	}
	defer func() { _ = out.Body.Close() }() // read-only
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		return false, p.fail("read", rel, err)
	}
	return n == f.Size && hex.EncodeToString(h.Sum(nil)) == f.SHA256, nil
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
