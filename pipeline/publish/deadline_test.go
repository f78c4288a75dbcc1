package publish_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/publishtest"
	"sitewatch/pipeline/publish/s3test"
)

// hungServer accepts TCP connections on loopback; each connection is handed to serve, which
// may read the request and then stall. It returns the endpoint URL.
func hungServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
				<-stop // hold the connection open, never answering more
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// TestDeadlines: an endpoint that accepts TCP and never answers (or stops in the middle of a
// body) makes every bucket operation fail at its first-byte (or idle) deadline instead of
// hanging. Those are 300 ms here (two attempts: about 0.6 s) and the whole request's a minute
// (two attempts: two minutes): an operation still waiting half a minute later waited for the
// request deadline, or for nothing. A loaded machine cannot stretch one into the other, as it
// could 0.6 s past the 4 s bound this had.
func TestDeadlines(t *testing.T) {
	s3test.SetCredentials(t, "AKIDEXAMPLE", "secret-deadline-0123")
	short := publish.Deadlines{Connect: time.Second, FirstByte: 300 * time.Millisecond, Idle: 300 * time.Millisecond, Request: time.Minute}
	cases := map[string]func(net.Conn){
		"NoAnswer": func(net.Conn) {},
		"StalledBody": func(c net.Conn) {
			_, _ = http.ReadRequest(bufio.NewReader(c))
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"format\":"))
		},
	}
	for name, serve := range cases {
		t.Run(name, func(t *testing.T) {
			endpoint := hungServer(t, serve)
			cfg := config.PublishConfig{URL: "s3://warehouse/p", Endpoint: endpoint, Region: "us-east-1", PathStyle: true}
			p, err := publish.New(context.Background(), cfg, publish.Options{MaxAttempts: 2, MaxBackoff: 10 * time.Millisecond, Deadlines: short})
			if err != nil {
				t.Fatal(err)
			}
			tree := publishtest.NewFixture(t).Parquet()
			done := make(chan error, 1)
			go func() {
				_, err := p.Pending(context.Background(), tree)
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(short.Request / 2):
				t.Fatalf("Pending against a hung endpoint still waiting %v later: not ended by its first-byte or idle deadline (%v)", short.Request/2, short.FirstByte)
			}
			if !errors.Is(err, publish.ErrUnreachable) || !strings.Contains(err.Error(), "does not answer") {
				t.Errorf("err = %v, want ErrUnreachable saying the endpoint does not answer", err)
			}
		})
	}
	if d := publish.DefaultDeadlines; d.Connect != 10*time.Second || d.FirstByte != 30*time.Second || d.Idle != 30*time.Second || d.Request != 5*time.Minute {
		t.Errorf("DefaultDeadlines = %+v; docs/sharing.md states 10s, 30s, 30s, 5m", d)
	}
}

// TestNoCredentialsWithEndpoint: with publish.endpoint set and no credentials, the instance
// metadata service is never asked, and the error is one line naming what to set.
func TestNoCredentialsWithEndpoint(t *testing.T) {
	s3test.SetCredentials(t, "", "")
	var hits atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "no role", http.StatusNotFound)
	}))
	defer imds.Close()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	cfg := config.PublishConfig{URL: "s3://warehouse/p", Endpoint: "http://127.0.0.1:9", Region: "us-east-1", PathStyle: true}
	_, err := publish.New(context.Background(), cfg, publish.Options{})
	if !errors.Is(err, publish.ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	msg := err.Error()
	for _, want := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message does not name %s: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "IMDS") || strings.Contains(msg, "ec2imds") {
		t.Errorf("message is not one clear line: %q", msg)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the instance metadata service was asked %d times with publish.endpoint set", n)
	}
}
