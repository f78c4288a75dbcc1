package atlastest_test

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// requestsPerOp is the work of one benchmark iteration, so that -benchtime 1x (make bench)
// still measures a steady state.
const requestsPerOp = 20000

// load sends n GETs to the paths in turn from workers concurrent keep-alive clients and
// returns the elapsed time; any status other than 200 fails the benchmark.
func load(b *testing.B, base string, paths []string, n, workers int) time.Duration {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req, _ := http.NewRequest(http.MethodGet, base+paths[i%int64(len(paths))], nil)
				req.Header.Set("X-API-Key", "bench")
				resp, err := c.Do(req)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Store("status " + strconv.Itoa(resp.StatusCode))
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if f := failed.Load(); f != nil {
		b.Fatalf("load: %v", f)
	}
	return el
}

// BenchmarkServe measures the simulator's throughput on loopback with a high rate and no
// latency (req/s), and the same load against a bare net/http server answering the same
// bodies from a map (bare_req/s); sim/bare is their ratio in this run. Client and servers
// share the machine's cores, so req/s is a floor of what a separate client would see.
func BenchmarkServe(b *testing.B) {
	s := atlastest.NewServer(atlastest.Options{Rate: 1 << 30, Keys: map[string]int64{"bench": 1 << 50}, Month: testMonth})
	defer s.Close()
	var paths []string
	for _, d := range atlastest.Domains(500) {
		paths = append(paths, "/atlas/site-overview?url="+d, "/atlas/site-similar?url="+d)
	}
	g := atlastest.NewGenerator(1, testMonth)
	static := map[string][]byte{}
	for _, d := range atlastest.Domains(500) {
		static["/atlas/site-overview?url="+d] = g.OverviewBody(d)
		static["/atlas/site-similar?url="+d] = g.SimilarBody(d)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bare := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(static[r.URL.RequestURI()])
	})}
	go bare.Serve(l)
	defer bare.Close()

	const workers = 16
	load(b, s.URL, paths, 2000, workers) // warm the body cache and connections
	load(b, "http://"+l.Addr().String(), paths, 2000, workers)
	b.ResetTimer()
	var sim, base time.Duration
	for i := 0; i < b.N; i++ {
		sim += load(b, s.URL, paths, requestsPerOp, workers)
		base += load(b, "http://"+l.Addr().String(), paths, requestsPerOp, workers)
	}
	total := float64(b.N * requestsPerOp)
	b.ReportMetric(total/sim.Seconds(), "req/s")
	b.ReportMetric(total/base.Seconds(), "bare_req/s")
	b.ReportMetric(base.Seconds()/sim.Seconds(), "sim/bare")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkGenerateCold measures building both bodies of a domain not yet in the cache (the
// first request for each domain of a month pays it; later ones are served from the cache).
func BenchmarkGenerateCold(b *testing.B) {
	domains := atlastest.Domains(200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g := atlastest.NewGenerator(int64(i+1), testMonth)
		for _, d := range domains {
			g.OverviewBody(d)
			g.SimilarBody(d)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(domains)), "µs/domain")
}
