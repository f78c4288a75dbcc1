package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sitewatch/schema/flatten"
)

// This file runs the benchmark's reference SQL on a current DuckDB: the one @duckdb/node-api
// bundles, driven by testdata/duckdb_node_bench.mjs. go-duckdb 1.8.2 links DuckDB 1.1.2,
// whose read_json is 2–3 times slower than current releases', so a ratio against it alone
// flatters the rebuild.

// nodeDuckDBPackage is the npm package and version installed for the comparison. Every
// release of @duckdb/node-api carries a "-r.N" suffix, which npm's "@1" range does not match.
const nodeDuckDBPackage = "@duckdb/node-api@1.5.6-r.1"

// errNodeUnavailable marks why the current-DuckDB comparison cannot run here; the benchmark
// reports it and skips that ratio.
var errNodeUnavailable = errors.New("current DuckDB through node unavailable")

// nodeCacheDir is where npm installs @duckdb/node-api on first use:
// $SITEWATCH_BENCH_NODE_CACHE, else <user cache dir>/sitewatch-bench.
func nodeCacheDir() (string, error) {
	if dir := os.Getenv("SITEWATCH_BENCH_NODE_CACHE"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: no cache directory for npm (set SITEWATCH_BENCH_NODE_CACHE): %v", errNodeUnavailable, err)
	}
	return filepath.Join(base, "sitewatch-bench"), nil
}

// nodeWithDuckDB returns the node binary and a NODE_PATH holding @duckdb/node-api, installing
// the package with npm into nodeCacheDir when it is missing. Errors wrap errNodeUnavailable.
func nodeWithDuckDB(ctx context.Context) (node, nodePath string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("%w: node is not on PATH (install Node.js 18 or later)", errNodeUnavailable)
	}
	cache, err := nodeCacheDir()
	if err != nil {
		return "", "", err
	}
	modules := filepath.Join(cache, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@duckdb", "node-api", "package.json")); err == nil {
		return node, modules, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "", fmt.Errorf("%w: %s is not installed in %s and npm is not on PATH", errNodeUnavailable, nodeDuckDBPackage, cache)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", fmt.Errorf("%w: create npm cache %s: %v", errNodeUnavailable, cache, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--prefix", cache, "--no-audit", "--no-fund", "--no-save", nodeDuckDBPackage).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%w: npm install %s into %s: %v\n%s", errNodeUnavailable, nodeDuckDBPackage, cache, err, tail(out, 800))
	}
	return node, modules, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// nodePlan is testdata/duckdb_node_bench.mjs's input.
type nodePlan struct {
	Database string   `json:"database"`
	Setup    []string `json:"setup"`
	Load     []string `json:"load"`
	Reps     int      `json:"reps"`
	Count    string   `json:"count"` // one number: the rows load left in the snapshot tables
}

// nodeDuckDB runs the reference SQL on a current DuckDB, one node process per round, on one
// database file, so its rounds can alternate with the other paths' under the same load.
type nodeDuckDB struct {
	node, nodePath, script, dir string
	setup                       []string // w's snapshot tables' DDL, run in the first round
	count                       string
	rounds                      int
}

// newNodeDuckDB prepares a database file in dir with w's snapshot tables (same DDL). Errors
// wrap errNodeUnavailable when node, npm or the package is missing.
func newNodeDuckDB(ctx context.Context, w *Warehouse, dir string) (*nodeDuckDB, error) {
	node, nodePath, err := nodeWithDuckDB(ctx)
	if err != nil {
		return nil, err
	}
	script, err := filepath.Abs(filepath.Join("testdata", "duckdb_node_bench.mjs"))
	if err != nil {
		return nil, err
	}
	n := &nodeDuckDB{node: node, nodePath: nodePath, script: script, dir: dir}
	var counts []string
	for _, t := range flatten.SnapshotTables {
		var ddl string
		if err := w.DB().QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE table_name = ?`, t.Name).Scan(&ddl); err != nil {
			return nil, fmt.Errorf("read the DDL of %s: %w", t.Name, err)
		}
		n.setup = append(n.setup, ddl)
		counts = append(counts, `(SELECT count(*) FROM `+t.Name+`)`)
	}
	n.count = `SELECT ` + strings.Join(counts, " + ")
	return n, nil
}

// nodeRun is what one round of the reference SQL in node measured.
type nodeRun struct {
	Version string        // the current DuckDB's version
	Elapsed time.Duration // measured inside node (its startup excluded)
	CPU     time.Duration // user + system time of the whole node process
	Rows    int           // the rows the snapshot tables hold afterwards
}

// load runs the statements once, in one transaction, in a node process of its own.
func (n *nodeDuckDB) load(ctx context.Context, stmts []string) (nodeRun, error) {
	plan := nodePlan{Database: filepath.Join(n.dir, "node.duckdb"), Load: stmts, Reps: 1, Count: n.count}
	if n.rounds == 0 {
		plan.Setup = n.setup
	}
	n.rounds++
	planFile := filepath.Join(n.dir, "node_plan.json")
	data, err := json.Marshal(plan)
	if err != nil {
		return nodeRun{}, err
	}
	if err := os.WriteFile(planFile, data, 0o644); err != nil {
		return nodeRun{}, err
	}
	cmd := exec.CommandContext(ctx, n.node, n.script, planFile)
	cmd.Env = append(os.Environ(), "NODE_PATH="+n.nodePath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nodeRun{}, fmt.Errorf("node %s %s: %w\n%s%s", n.script, planFile, err, tail(out, 1000), tail([]byte(stderr.String()), 2000))
	}
	var res struct {
		Version string    `json:"version"`
		MS      []float64 `json:"ms"`
		Rows    int       `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.MS) != 1 {
		return nodeRun{}, fmt.Errorf("node %s printed %q, want {\"version\", \"ms\": [one number], \"rows\"}: %v", n.script, out, err)
	}
	return nodeRun{Version: res.Version, Elapsed: time.Duration(res.MS[0] * float64(time.Millisecond)),
		CPU: processCPU(cmd.ProcessState), Rows: res.Rows}, nil
}

// processCPU is the user + system time of a finished process.
func processCPU(s *os.ProcessState) time.Duration {
	return s.UserTime() + s.SystemTime()
}
