package publish_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/s3test"
)

// deadProxy relays TCP to a target, except the next `dead` connections it accepts: those
// read what their client sends and never answer, never close (a connection that died in a
// network cut, as the soak's partitions leave them). It counts the requests they received.
type deadProxy struct {
	addr    string
	mu      sync.Mutex
	dead    int
	reached int
}

func newDeadProxy(t *testing.T, target string, dead int) *deadProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); _ = l.Close() })
	p := &deadProxy{addr: l.Addr().String(), dead: dead}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			dead := p.dead > 0
			p.dead--
			p.mu.Unlock()
			if dead {
				go p.swallow(c, stop)
				continue
			}
			go relay(c, target)
		}
	}()
	return p
}

func (p *deadProxy) swallow(c net.Conn, stop <-chan struct{}) {
	defer c.Close()
	buf := make([]byte, 1024)
	if n, _ := c.Read(buf); n > 0 {
		p.mu.Lock()
		p.reached++
		p.mu.Unlock()
	}
	go func() { _, _ = io.Copy(io.Discard, c) }()
	<-stop
}

func relay(client net.Conn, target string) {
	defer client.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(up, client) }()
	_, _ = io.Copy(client, up)
}

// TestSmallPublisherAbandonsADeadConnection (issue 42, heal fast): the lease's and the answer
// log's client abandons a request that gets no answer within SmallDeadlines.FirstByte (3 s)
// and sends it again on a fresh connection (every connection it kept is dropped after a
// failure): after a cut heals, its write lands within seconds, where the default client
// waited DefaultDeadlines.FirstByte (30 s) on the dead connection.
func TestSmallPublisherAbandonsADeadConnection(t *testing.T) {
	gw := s3test.Start(t)
	gw.CreateBucket(t, "heal")
	gw.SetEnv(t)
	px := newDeadProxy(t, strings.TrimPrefix(gw.Endpoint, "http://"), 1)
	cfg := config.PublishConfig{URL: "s3://heal/p", Endpoint: "http://" + px.addr, Region: "us-east-1", PathStyle: true}
	p, err := publish.New(context.Background(), cfg, publish.Options{Small: true, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := p.PutConditional(context.Background(), "after-the-cut", []byte("y"), ""); err != nil {
		t.Fatalf("the write failed: %v", err)
	}
	took := time.Since(start)
	px.mu.Lock()
	reached := px.reached
	px.mu.Unlock()
	t.Logf("landed after %v; the dead connection got %d request", took.Round(time.Millisecond), reached)
	if reached != 1 {
		t.Errorf("the dead connection got %d requests, want the first attempt", reached)
	}
	if took >= publish.DefaultDeadlines.FirstByte {
		t.Errorf("the write landed after %v, not before the default first-byte deadline %v", took, publish.DefaultDeadlines.FirstByte)
	}
}
