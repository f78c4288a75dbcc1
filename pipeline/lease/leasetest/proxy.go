// Package leasetest holds test helpers for the bucket lease and the faults it must survive:
// a loopback TCP proxy that can partition one runner from the bucket (Proxy), and a clock
// that tests move by hand (Clock). It is a normal package so that tests of several packages
// (the lease, the runner fault tests) can share it.
package leasetest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Mode is what a Proxy does with the bytes of its connections.
type Mode int

const (
	// Pass relays every byte both ways.
	Pass Mode = iota
	// Hang models a partition: connections (old and new) are accepted and kept open but no
	// byte reaches the other side, so a client waits until its own deadline.
	Hang
	// Refuse closes every connection at once: the client sees a reset or EOF immediately.
	Refuse
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Hang:
		return "hang"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy is a TCP relay on a loopback port in front of one target address. Point a runner's
// endpoint at URL instead of the target's, then Cut or Refuse it to partition that runner
// alone; Heal reconnects it (connections that lost bytes are closed, as a real partition's
// would time out).
type Proxy struct {
	// Addr is the proxy's host:port; URL is "scheme://Addr" when the target was a URL.
	Addr string
	URL  string

	target string
	ln     net.Listener

	mu    sync.Mutex
	mode  Mode
	conns map[*pipe]struct{}
	wg    sync.WaitGroup
}

// pipe is one client connection and, while passing, its upstream connection.
type pipe struct {
	client, upstream net.Conn
	tainted          bool // bytes were dropped: the stream is broken for good
}

// NewProxy starts a proxy to target (host:port, or a URL such as s3test.Server.Endpoint) and
// closes it when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Listen(target)
	if err != nil {
		t.Fatalf("leasetest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// Listen starts a proxy to target on a free loopback port; Close stops it.
func Listen(target string) (*Proxy, error) {
	host, scheme := target, ""
	if strings.Contains(target, "://") {
		u, err := url.Parse(target)
		if err != nil {
			return nil, fmt.Errorf("proxy target %q: %w", target, err)
		}
		host, scheme = u.Host, u.Scheme
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: host, ln: ln, conns: map[*pipe]struct{}{}}
	if scheme != "" {
		p.URL = scheme + "://" + p.Addr
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Mode returns the proxy's current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Cut partitions the proxy's clients from the target (Hang): every byte from now on is lost.
func (p *Proxy) Cut() { p.set(Hang) }

// Refuse closes every connection and every new one at once.
func (p *Proxy) Refuse() { p.set(Refuse) }

// Heal relays again; connections that lost bytes while cut are closed.
func (p *Proxy) Heal() { p.set(Pass) }

func (p *Proxy) set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	for c := range p.conns {
		switch m {
		case Hang:
			c.tainted = true
		case Refuse:
			c.close()
		case Pass:
			if c.tainted {
				c.close()
			}
		}
	}
}

// Close stops accepting, closes every connection and waits for the relays to end.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(conn)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	c := &pipe{client: client}
	p.mu.Lock()
	mode := p.mode
	if mode == Hang {
		c.tainted = true
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	defer p.forget(c)
	switch mode {
	case Refuse:
		return
	case Hang: // accepted, never answered
		_, _ = io.Copy(io.Discard, client)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	c.upstream = up
	if p.mode != Pass { // cut while dialing
		c.tainted = true
	}
	p.mu.Unlock()
	done := make(chan bool, 2)
	go func() { done <- p.relay(c, up, client) }()
	go func() { done <- p.relay(c, client, up) }()
	pending := 2
	for pending > 0 {
		halfClosed := <-done
		pending--
		if !halfClosed { // a broken way breaks the other: close both and wait for the rest
			p.closePipe(c)
		}
	} // a clean half-close leaves the other way open: it may still carry an answer
}

// relay copies src to dst, dropping what it reads while the pipe is tainted. It reports
// whether src ended cleanly (EOF passed on as a half-close) rather than with an error.
func (p *Proxy) relay(c *pipe, dst, src net.Conn) bool {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop := c.tainted
			p.mu.Unlock()
			if !drop {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return false
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return false
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return true
		}
	}
}

func (p *Proxy) forget(c *pipe) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.close()
	delete(p.conns, c)
}

func (p *Proxy) closePipe(c *pipe) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.close()
}

// close closes both sides; the caller holds the proxy's lock.
func (c *pipe) close() {
	_ = c.client.Close()
	if c.upstream != nil {
		_ = c.upstream.Close()
	}
}
