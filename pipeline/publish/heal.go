package publish

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// SmallDeadlines are the deadlines of a Publisher of small objects only (Options.Small: the
// lease, the answer log's segments): a request whose answer does not start within seconds is
// abandoned and sent again on a fresh connection, so after a network cut heals, the next
// write lands within seconds instead of waiting out the 30 s of DefaultDeadlines on a dead
// connection.
var SmallDeadlines = Deadlines{Connect: 3 * time.Second, FirstByte: 3 * time.Second, Idle: 3 * time.Second, Request: 30 * time.Second}

// freshAfterFailure is an HTTP client that closes every connection it opened after a request
// fails: a connection that timed out, or any other kept since before a cut, is never reused,
// so the retry dials anew. Only for a Publisher of small, one-at-a-time requests: a failure
// also ends the requests in flight on its other connections.
type freshAfterFailure struct {
	inner aws.HTTPClient
	conns *connSet
}

func (f freshAfterFailure) Do(r *http.Request) (*http.Response, error) {
	resp, err := f.inner.Do(r)
	if err != nil {
		f.conns.closeAll()
	}
	return resp, err
}

// connSet tracks the open connections a dialer made.
type connSet struct {
	dialer *net.Dialer
	mu     sync.Mutex
	open   map[*trackedConn]struct{}
}

func newConnSet(d *net.Dialer) *connSet {
	return &connSet{dialer: d, open: map[*trackedConn]struct{}{}}
}

func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := s.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, set: s}
	s.mu.Lock()
	s.open[tc] = struct{}{}
	s.mu.Unlock()
	return tc, nil
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	conns := make([]*trackedConn, 0, len(s.open))
	for c := range s.open {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close() // abandoned: the transport sees it closed and dials anew
	}
}

type trackedConn struct {
	net.Conn
	set  *connSet
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.open, c)
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
}
