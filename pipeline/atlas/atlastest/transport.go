package atlastest

import (
	"net/http"
	"net/http/httptest"
)

// Transport carries each request straight to Handler (the simulator's, from NewHandler), in
// memory: no socket, so a testing/synctest bubble's fake clock runs the client, its rate
// limiter and the simulator's latency and rate windows alike.
type Transport struct{ Handler http.Handler }

// RoundTrip serves r with the handler and returns what it wrote.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.Handler.ServeHTTP(rec, r)
	return rec.Result(), nil
}
