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

// nodeDuckDBPackage is the npm package (and major version) installed for the comparison.
const nodeDuckDBPackage = "@duckdb/node-api@1"

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

// nodeDuckDB returns the node binary and a NODE_PATH holding @duckdb/node-api, installing the
// package with npm into nodeCacheDir when it is missing. Errors wrap errNodeUnavailable.
func nodeDuckDB(ctx context.Context) (node, nodePath string, err error) {
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

// nodeDuckDBLoad creates w's snapshot tables (same DDL) in a fresh database file in dir and
// runs load reps times on the current DuckDB, each rep in one transaction. It returns that
// DuckDB's version, the time of each rep, measured inside node (startup excluded), and the
// rows the load left in the snapshot tables.
func nodeDuckDBLoad(ctx context.Context, w *Warehouse, dir string, load []string, reps int) (version string, times []time.Duration, rows int, err error) {
	node, nodePath, err := nodeDuckDB(ctx)
	if err != nil {
		return "", nil, 0, err
	}
	var counts []string
	for _, t := range flatten.SnapshotTables {
		counts = append(counts, `(SELECT count(*) FROM `+t.Name+`)`)
	}
	plan := nodePlan{Database: filepath.Join(dir, "node.duckdb"), Load: load, Reps: reps,
		Count: `SELECT ` + strings.Join(counts, " + ")}
	for _, t := range flatten.SnapshotTables {
		var ddl string
		if err := w.DB().QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE table_name = ?`, t.Name).Scan(&ddl); err != nil {
			return "", nil, 0, fmt.Errorf("read the DDL of %s: %w", t.Name, err)
		}
		plan.Setup = append(plan.Setup, ddl)
	}
	planFile := filepath.Join(dir, "node_plan.json")
	data, err := json.Marshal(plan)
	if err != nil {
		return "", nil, 0, err
	}
	if err := os.WriteFile(planFile, data, 0o644); err != nil {
		return "", nil, 0, err
	}
	script, err := filepath.Abs(filepath.Join("testdata", "duckdb_node_bench.mjs"))
	if err != nil {
		return "", nil, 0, err
	}
	cmd := exec.CommandContext(ctx, node, script, planFile)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, 0, fmt.Errorf("node %s: %w\n%s", script, err, tail([]byte(stderr.String()), 2000))
	}
	var res struct {
		Version string    `json:"version"`
		MS      []float64 `json:"ms"`
		Rows    int       `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.MS) != reps {
		return "", nil, 0, fmt.Errorf("node %s printed %q, want {\"version\", \"ms\": [%d numbers], \"rows\"}: %v", script, out, reps, err)
	}
	for _, ms := range res.MS {
		times = append(times, time.Duration(ms*float64(time.Millisecond)))
	}
	return res.Version, times, res.Rows, nil
}
