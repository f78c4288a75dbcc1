package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Deadlines of the catalog: no wait on it is unbounded, so a catalog that accepts TCP and never
// answers, or a lock held on its tables, ends a publish with an error (and its lease released)
// instead of hanging it while the lease keeps every other runner out.
const (
	// CatalogConnectTimeout bounds connecting to the SQL catalog (TCP, TLS and the start-up
	// exchange) and each connection to a REST catalog.
	CatalogConnectTimeout = 10 * time.Second
	// CatalogStatementTimeout is the SQL catalog's statement_timeout: the server cancels a
	// statement that runs longer.
	CatalogStatementTimeout = 30 * time.Second
	// CatalogLockTimeout is the SQL catalog's lock_timeout: a statement waiting this long for a
	// lock another session holds on iceberg_tables fails.
	CatalogLockTimeout = 10 * time.Second
	// CatalogReadTimeout bounds every wait for the catalog's answer on this side (longer than
	// the statement timeout, so the server's own cancel comes first when it is alive).
	CatalogReadTimeout = 45 * time.Second
)

// openSQLDB opens the SQL catalog's database with the deadlines above; the caller's own
// settings in the URL (connect_timeout, statement_timeout, lock_timeout) are kept.
func openSQLDB(dsn string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout <= 0 || cfg.ConnectTimeout > CatalogConnectTimeout {
		cfg.ConnectTimeout = CatalogConnectTimeout
	}
	for k, v := range map[string]time.Duration{"statement_timeout": CatalogStatementTimeout, "lock_timeout": CatalogLockTimeout,
		"idle_in_transaction_session_timeout": 2 * CatalogStatementTimeout} {
		if cfg.RuntimeParams[k] == "" {
			cfg.RuntimeParams[k] = strconv.FormatInt(v.Milliseconds(), 10)
		}
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &boundedConn{Conn: c, bound: CatalogReadTimeout}, nil
	}
	return stdlib.OpenDB(*cfg), nil
}

// boundedConn ends every read that waits longer than bound for a byte, whatever the driver
// asked; a read deadline the driver sets (its way to cancel) still applies when sooner.
type boundedConn struct {
	net.Conn
	bound time.Duration

	mu    sync.Mutex
	asked time.Time // the driver's read deadline; zero: none
}

func (c *boundedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	d := time.Now().Add(c.bound)
	if !c.asked.IsZero() && c.asked.Before(d) {
		d = c.asked
	}
	err := c.Conn.SetReadDeadline(d)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if ne, ok := err.(net.Error); ok && ne.Timeout() && c.ownDeadline() {
		return n, fmt.Errorf("the catalog sent nothing for %v: %w", c.bound, err)
	}
	return n, err
}

// ownDeadline says whether the read deadline that passed was this wrapper's, not the driver's.
func (c *boundedConn) ownDeadline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked.IsZero() || time.Now().Before(c.asked)
}

func (c *boundedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = t
	return c.Conn.SetDeadline(t)
}

func (c *boundedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = t
	return c.Conn.SetReadDeadline(t)
}

// restTransport carries a REST catalog's requests (and its OAuth2 token requests) with
// connect and answer deadlines, and remembers the last refused answer, so an error whose
// own text is empty (a token endpoint answering 404) can say which URL answered what.
type restTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	last string // "POST https://…/v1/oauth/tokens answered HTTP 404 Not Found"
}

func newRESTTransport() *restTransport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: CatalogConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = CatalogConnectTimeout
	tr.ResponseHeaderTimeout = CatalogReadTimeout
	return &restTransport{base: tr}
}

func (t *restTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 300 {
		u := *r.URL
		u.User, u.RawQuery = nil, "" // never a credential
		t.mu.Lock()
		t.last = fmt.Sprintf("%s %s answered HTTP %s", r.Method, u.String(), resp.Status)
		t.mu.Unlock()
	}
	return resp, err
}

// lastRefusal is the last answer of status 300 or more, or "".
func (t *restTransport) lastRefusal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}
