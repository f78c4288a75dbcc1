package lease_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/s3test"
)

func bucket(t *testing.T, endpoint string) *publish.Publisher {
	t.Helper()
	cfg := config.PublishConfig{URL: "s3://lease/p", Endpoint: endpoint, Region: "us-east-1", PathStyle: true}
	p, err := publish.New(context.Background(), cfg, publish.Options{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func gateway(t *testing.T) *s3test.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lease")
	srv.SetEnv(t)
	return srv
}

// TestGatewayHonoursConditionalWrites: the gateway the tests run (versitygw) refuses a second
// If-None-Match: * create and an If-Match on a stale ETag with 412.
func TestGatewayHonoursConditionalWrites(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	ctx := context.Background()
	etag, err := p.PutConditional(ctx, "k.json", []byte(`{"a":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutConditional(ctx, "k.json", []byte(`{"a":2}`), ""); !errors.Is(err, publish.ErrPrecondition) {
		t.Errorf("second create with If-None-Match: * = %v, want ErrPrecondition", err)
	}
	next, err := p.PutConditional(ctx, "k.json", []byte(`{"a":3}`), etag)
	if err != nil {
		t.Fatalf("If-Match on the current ETag: %v", err)
	}
	if _, err := p.PutConditional(ctx, "k.json", []byte(`{"a":4}`), etag); !errors.Is(err, publish.ErrPrecondition) {
		t.Errorf("If-Match on a stale ETag = %v, want ErrPrecondition", err)
	}
	if body, _, _, _ := p.GetSmall(ctx, "k.json"); string(body) != `{"a":3}` {
		t.Errorf("object = %s, want the write of the current ETag", body)
	}
	if err := p.DeleteConditional(ctx, "k.json", next); err != nil {
		t.Errorf("delete on the current ETag: %v", err)
	}
}

// TestOneHolder: a second taker fails naming the holder; after release it succeeds.
func TestOneHolder(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	ctx := context.Background()
	a := lease.New(p, lease.Options{TTL: time.Minute, Command: "sitewatch run"})
	_, releaseA, err := a.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = lease.New(p, lease.Options{TTL: time.Minute}).Take(ctx)
	var held *lease.HeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "sitewatch run") || !strings.Contains(err.Error(), "nothing was spent") {
		t.Fatalf("second take = %v, want a *HeldError naming the holder", err)
	}
	releaseA()
	if _, _, found, _ := p.GetSmall(ctx, lease.Key); found {
		t.Error("the lease object is still there after release")
	}
	_, releaseB, err := lease.New(p, lease.Options{TTL: time.Minute}).Take(ctx)
	if err != nil {
		t.Fatalf("take after release: %v", err)
	}
	releaseB()
}

// TestServiceIgnoringConditions: a service that accepts a second If-None-Match: * create is
// refused with a message pointing at publish.lease: off.
func TestServiceIgnoringConditions(t *testing.T) {
	srv := gateway(t)
	target, _ := url.Parse(srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	var creates atomic.Int64
	px := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" && creates.Add(1) > 1 {
			w.Header().Set("ETag", `"ignored-condition"`) // what a service without conditional writes answers
			w.WriteHeader(http.StatusOK)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer px.Close()
	_, _, err := lease.New(bucket(t, px.URL), lease.Options{TTL: time.Minute}).Take(context.Background())
	if !errors.Is(err, lease.ErrNoConditionalWrites) || !strings.Contains(err.Error(), "publish.lease: off") {
		t.Errorf("take on a service ignoring If-None-Match = %v, want ErrNoConditionalWrites", err)
	}
}
