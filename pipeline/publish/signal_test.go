package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/s3test"
)

// TestSignalBeforeTheBucket: a signal (the context cancelled) while the publisher looks for
// its credentials is reported as a stop, not as missing AWS credentials.
func TestSignalBeforeTheBucket(t *testing.T) {
	s3test.SetCredentials(t, "", "") // the chain has to look further, as on a runner with a role
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := publish.New(ctx, config.PublishConfig{URL: "s3://team-bucket/team", Region: "us-east-1", Endpoint: "http://127.0.0.1:9"}, publish.Options{})
	if err == nil {
		t.Fatal("New succeeded without credentials")
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, publish.ErrCredentials) || strings.Contains(err.Error(), "credentials") {
		t.Errorf("New under a signal = %q, want a stop (context canceled), not a credentials error", err)
	}
	if want := "publish to s3://team-bucket/team/: stopped before the bucket was reached: context canceled"; err.Error() != want {
		t.Errorf("New under a signal = %q, want %q", err, want)
	}
}

// TestSignalDuringARequest: a request the signal cancels reports it plainly, without the
// SDK's "StatusCode: 0, RequestID: …" text.
func TestSignalDuringARequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	srv := s3test.Start(t)
	srv.CreateBucket(t, "team-bucket")
	srv.SetEnv(t)
	p, err := publish.New(context.Background(), config.PublishConfig{URL: "s3://team-bucket/team", Region: "us-east-1", Endpoint: srv.Endpoint, PathStyle: true}, publish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.PutConditional(ctx, "_sitewatch/lease.json", []byte("{}"), "")
	if err == nil {
		t.Fatal("a cancelled request succeeded")
	}
	msg := err.Error()
	if want := "write s3://team-bucket/team/_sitewatch/lease.json: interrupted by a signal or shutdown"; msg != want {
		t.Errorf("cancelled request = %q, want %q", msg, want)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the error does not wrap context.Canceled: %v", err)
	}
}
