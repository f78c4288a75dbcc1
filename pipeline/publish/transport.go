package publish

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go/logging"

	"sitewatch/pipeline/config"
)

// Deadlines bound every request to the bucket, so an endpoint that accepts connections and
// never answers cannot hold a publish, restore, lease or status forever. A request that
// misses one fails with a timeout, which the retryer retries like a connection error: a hung
// endpoint costs at most MaxAttempts × (Connect + FirstByte) plus the backoff between them.
type Deadlines struct {
	// Connect bounds the TCP connect and the TLS handshake (default 10s).
	Connect time.Duration
	// FirstByte bounds the wait for the response headers after the request is sent (default 30s).
	FirstByte time.Duration
	// Idle bounds the wait for each next byte of a response body (default 30s).
	Idle time.Duration
	// Request bounds one whole request, body included (default 5m: a 16 MiB part at 56 KB/s).
	Request time.Duration
}

// DefaultDeadlines are the deadlines of Options' zero value (docs/sharing.md states them).
var DefaultDeadlines = Deadlines{Connect: 10 * time.Second, FirstByte: 30 * time.Second, Idle: 30 * time.Second, Request: 5 * time.Minute}

func (d Deadlines) withDefaults() Deadlines {
	def := DefaultDeadlines
	if d.Connect <= 0 {
		d.Connect = def.Connect
	}
	if d.FirstByte <= 0 {
		d.FirstByte = def.FirstByte
	}
	if d.Idle <= 0 {
		d.Idle = def.Idle
	}
	if d.Request <= 0 {
		d.Request = def.Request
	}
	return d
}

// httpClient is one client for every request of a Publisher, so Concurrency bounds the
// connections to the endpoint, with every deadline of d.
func httpClient(d Deadlines, conns int) *awshttp.BuildableClient {
	return buildableClient(d, conns, nil)
}

// clientFor is httpClient, with for a Publisher of small objects (Options.Small) the set of
// connections it dials (set nil otherwise): wrapped by freshAfterFailure once the AWS
// configuration is loaded (which needs the buildable client itself, e.g. for a CA bundle).
func clientFor(opts Options) (*awshttp.BuildableClient, *connSet) {
	if !opts.Small {
		return httpClient(opts.Deadlines, opts.Concurrency), nil
	}
	set := newConnSet(&net.Dialer{Timeout: opts.Deadlines.Connect, KeepAlive: 30 * time.Second})
	return buildableClient(opts.Deadlines, opts.Concurrency, set.dial), set
}

func buildableClient(d Deadlines, conns int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(dl *net.Dialer) { dl.Timeout = d.Connect }).
		WithTransportOptions(func(tr *http.Transport) {
			if dial != nil {
				tr.DialContext = dial
			}
			tr.MaxConnsPerHost = conns
			tr.MaxIdleConnsPerHost = conns
			tr.TLSHandshakeTimeout = d.Connect
			tr.ResponseHeaderTimeout = d.FirstByte
			tr.ExpectContinueTimeout = time.Second
		}).
		WithReadTimeout(d.Idle).
		WithTimeout(d.Request)
}

// loadAWSConfig reads the standard AWS configuration (environment, shared files), with
// sitewatch's transport and retries and without the SDK's own log lines. With an endpoint
// set (MinIO, Ceph, R2, a gateway) there is no instance role to ask: the EC2 instance
// metadata service is never consulted.
func loadAWSConfig(ctx context.Context, cfg config.PublishConfig, opts Options) (aws.Config, error) {
	client, conns := clientFor(opts)
	loaders := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithHTTPClient(client),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.MaxAttempts
				o.MaxBackoff = opts.MaxBackoff
			})
		}),
		awsconfig.WithLogger(logging.Nop{}),
		awsconfig.WithClientLogMode(0),
	}
	if cfg.Endpoint != "" {
		loaders = append(loaders, awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	if cfg.Region != "" {
		loaders = append(loaders, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("publish to %s: load the AWS configuration (environment, shared config files): %w", cfg.URL, err)
	}
	if conns != nil {
		awsCfg.HTTPClient = freshAfterFailure{inner: awsCfg.HTTPClient, conns: conns}
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1" // S3-compatible services mostly ignore it; AWS needs one to sign
	}
	return awsCfg, nil
}

// noCredentials is the one line a user reads when the chain found nothing: what to set.
func noCredentials(cfg config.PublishConfig) error {
	where := ", or run with an instance or container role"
	if cfg.Endpoint != "" {
		where = " (with publish.endpoint set, no instance role is consulted)"
	}
	return fmt.Errorf("publish to %s: no AWS %w found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile of ~/.aws/credentials%s",
		cfg.URL, ErrCredentials, where)
}
