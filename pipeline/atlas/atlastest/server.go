package atlastest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is a simulator listening on a loopback port, in the manner of httptest.Server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT, without the /atlas prefix.
	URL string
	*Handler

	listener net.Listener
	srv      *http.Server
	served   chan error
}

// NewServer starts a simulator for opts on 127.0.0.1 with a free port. It panics on invalid
// options, like httptest.NewServer on a listen failure; use NewHandler to get the error.
func NewServer(opts Options) *Server {
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		panic(fmt.Sprintf("atlastest.NewServer: %v", err))
	}
	return s
}

// Listen starts a simulator for opts on addr (host:port; port 0 picks a free one). It returns
// an error for invalid options or when addr cannot be listened on.
func Listen(addr string, opts Options) (*Server, error) {
	h, err := NewHandler(opts)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{
		URL:      "http://" + l.Addr().String(),
		Handler:  h,
		listener: l,
		srv:      &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		served:   make(chan error, 1),
	}
	go func() { s.served <- s.srv.Serve(l) }()
	return s, nil
}

// Addr returns the address the server listens on (HOST:PORT).
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Client returns an HTTP client for the server (a fresh one with its own connection pool).
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

// Shutdown stops accepting connections, drops requests hanging on Faults.Hang, and waits for
// the other in-flight requests until ctx ends. It returns ctx's error if the
// wait was cut short.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Handler.close()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("serve: %w", serr)
	}
	s.served <- http.ErrServerClosed // later calls return at once
	if err != nil {
		return fmt.Errorf("shut down simulator at %s: %w", s.URL, err)
	}
	return nil
}

// Close shuts the server down and waits for in-flight requests.
func (s *Server) Close() {
	_ = s.Shutdown(context.Background())
}
