package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"sitewatch/pipeline/config"
)

// Publisher publishes months to an S3-compatible bucket. It is safe for one publish at a time.
type Publisher struct {
	loc      Location
	opts     Options
	log      *slog.Logger
	s3       *s3.Client
	tm       *transfermanager.Client
	secrets  []string // the resolved credentials, removed from every error message
	endpoint string   // publish.endpoint, named when it does not answer
	url      string   // publish.url (SyncState's identity of the bucket)
	// statePrefix is "" for the publisher of publish.url, RestoreCopyDir for its restore
	// copies': SyncState keys are relative to publish.url.
	statePrefix string
	// multipart admits one multipart upload at a time. Each holds Concurrency+1 buffers of
	// PartSize (the transfer manager's part pool: 80 MiB by default); files upload
	// Concurrency at a time, so at a million domains, where most files are larger than a
	// part, four pools at once raised the run's peak by ~380 MB. One multipart upload still
	// sends Concurrency parts at once.
	multipart chan struct{}
}

// New returns the Publisher of cfg, with credentials from the standard AWS chain
// (environment, shared profile, container or instance role). It returns ErrDisabled when
// cfg.URL is empty, and an error wrapping ErrCredentials when no credentials are found. It
// calls nothing on the bucket.
func New(ctx context.Context, cfg config.PublishConfig, opts Options) (*Publisher, error) {
	if cfg.URL == "" {
		return nil, ErrDisabled
	}
	loc, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	awsCfg, err := loadAWSConfig(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	creds, err := awsCfg.Credentials.Retrieve(ctx)
	if err != nil && ctx.Err() != nil { // a signal or a deadline, not missing credentials
		return nil, fmt.Errorf("publish to %s: stopped before the bucket was reached: %w", loc.URL(""), ctx.Err())
	}
	if err != nil {
		// The chain's own text lists every provider it tried: noise to a user, who needs
		// to know what to set.
		return nil, noCredentials(cfg)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Objects published by other tools may carry no checksum: nothing to warn about.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes = opts.PartSize
		o.MultipartUploadThreshold = opts.PartSize
		o.Concurrency = opts.Concurrency
		o.ChecksumAlgorithm = tmtypes.ChecksumAlgorithmSha256
	})
	return &Publisher{loc: loc, opts: opts, log: opts.Logger, s3: client, tm: tm, secrets: secretsOf(creds), endpoint: cfg.Endpoint, url: cfg.URL,
		multipart: make(chan struct{}, 1)}, nil
}

func secretsOf(c aws.Credentials) []string {
	return []string{c.SecretAccessKey, c.SessionToken, c.AccessKeyID}
}

func (p *Publisher) fail(op, rel string, err error) error {
	return storageError(op, p.loc.URL(rel), p.endpoint, err, p.secrets...)
}

// readManifest returns the published manifest of month, or nil when there is none.
func (p *Publisher) readManifest(ctx context.Context, month string) (*Manifest, error) {
	return p.readManifestAt(ctx, manifestRel(month))
}

// readManifestAt returns the manifest at rel (with its Key and ETag), or nil when there is
// none or it is unreadable (manifest.go: readManifestVersion).
func (p *Publisher) readManifestAt(ctx context.Context, rel string) (*Manifest, error) {
	m, _, err := p.readManifestVersion(ctx, rel)
	return m, err
}

// remoteObject is what a HEAD tells of a published object.
type remoteObject struct {
	found bool
	size  int64
	sum   string // sitewatch-sha256 metadata (hex)
	s3sum string // the SHA-256 checksum the service stored (base64; "…-N" for multipart)
}

// head returns what the service says of the object at rel; found is false when it does not
// exist.
func (p *Publisher) head(ctx context.Context, rel string) (remoteObject, error) {
	out, err := p.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel)), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		var nf *types.NotFound
		var api smithy.APIError
		if errors.As(err, &nf) || (errors.As(err, &api) && api.ErrorCode() == "NoSuchKey") {
			return remoteObject{}, nil
		}
		return remoteObject{}, p.fail("check", rel, err)
	}
	return remoteObject{found: true, size: aws.ToInt64(out.ContentLength), sum: out.Metadata[metaSHA256], s3sum: aws.ToString(out.ChecksumSHA256)}, nil
}

// metaSHA256 is the user metadata holding an object's hex SHA-256: with it a publish that was
// killed before its manifest recognises the objects it already uploaded.
const metaSHA256 = "sitewatch-sha256"

// upload puts f at its key. The server verifies the SHA-256: of the whole object for a single
// PUT, of each part for a multipart upload. It returns the checksum the server stored.
func (p *Publisher) upload(ctx context.Context, f *localFile) (string, error) {
	fh, err := openFile(f.Path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", f.Path, err)
	}
	defer func() { _ = fh.Close() }() // read-only
	in := &transfermanager.UploadObjectInput{
		Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(f.Rel)), Body: fh,
		ContentLength:     aws.Int64(f.Size),
		ContentType:       aws.String("application/vnd.apache.parquet"),
		ChecksumAlgorithm: tmtypes.ChecksumAlgorithmSha256,
		Metadata:          map[string]string{metaSHA256: hexSum(f.SHA256)},
	}
	if f.Size < p.opts.PartSize {
		in.ChecksumSHA256 = aws.String(encodeBase64(f.SHA256))
	} else {
		select {
		case p.multipart <- struct{}{}:
			defer func() { <-p.multipart }()
		case <-ctx.Done():
			return "", p.fail("upload", f.Rel, ctx.Err())
		}
	}
	start := time.Now()
	out, err := p.tm.UploadObject(ctx, in)
	if err != nil {
		return "", p.fail("upload", f.Rel, err)
	}
	p.log.Debug("uploaded", "url", p.loc.URL(f.Rel), "bytes", f.Size, "took", time.Since(start))
	return aws.ToString(out.ChecksumSHA256), nil
}

// delete removes the object at rel.
func (p *Publisher) delete(ctx context.Context, rel string) error {
	if _, err := p.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel))}); err != nil {
		return p.fail("delete", rel, err)
	}
	return nil
}

// list returns the objects directly under rel/ (not in its subdirectories): key relative to
// the prefix -> size.
func (p *Publisher) list(ctx context.Context, rel string) (map[string]int64, error) {
	prefix := p.loc.key(rel) + "/"
	keys := map[string]int64{}
	pages := s3.NewListObjectsV2Paginator(p.s3, &s3.ListObjectsV2Input{Bucket: &p.loc.Bucket, Prefix: &prefix, Delimiter: aws.String("/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail("list", rel+"/", err)
		}
		for _, o := range page.Contents {
			keys[p.loc.relOf(aws.ToString(o.Key))] = aws.ToInt64(o.Size)
		}
	}
	return keys, nil
}

// listAll returns every object under the prefix: key relative to the prefix -> size.
func (p *Publisher) listAll(ctx context.Context) (map[string]int64, error) {
	var prefix *string
	if p.loc.Prefix != "" {
		prefix = aws.String(p.loc.Prefix + "/")
	}
	keys := map[string]int64{}
	pages := s3.NewListObjectsV2Paginator(p.s3, &s3.ListObjectsV2Input{Bucket: &p.loc.Bucket, Prefix: prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail("list", "", err)
		}
		for _, o := range page.Contents {
			keys[p.loc.relOf(aws.ToString(o.Key))] = aws.ToInt64(o.Size)
		}
	}
	return keys, nil
}

// relOf is the inverse of key.
func (l Location) relOf(key string) string {
	if l.Prefix == "" {
		return key
	}
	return key[len(l.Prefix)+1:]
}
