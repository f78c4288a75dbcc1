package iceberg

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/marcboeker/go-duckdb"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish/iceberg/pgtest"
	"sitewatch/pipeline/publish/publishtest"
	"sitewatch/pipeline/publish/s3test"
)

// Months of the fixture warehouse.
const (
	monthA = publishtest.MonthA
	monthB = publishtest.MonthB
)

func TestMain(m *testing.M) {
	code := m.Run()
	publishtest.RemoveFixture()
	os.Exit(code)
}

// env is a PostgreSQL SQL catalog and an S3 gateway with a bucket, both on loopback, with the
// AWS credential chain set to the gateway's keys (nothing from the machine's own AWS files).
type env struct {
	pg     *pgtest.Server
	s3     *s3test.Server
	bucket string
}

func newEnv(t *testing.T) *env { return newEnvTB(t) }

func newEnvTB(t testing.TB) *env {
	t.Helper()
	e := &env{pg: pgtest.Start(t), s3: s3test.Start(t), bucket: "warehouse"}
	e.s3.CreateBucket(t, e.bucket)
	e.s3.SetEnv(t)
	t.Setenv("AWS_REGION", "us-east-1") // the region icebird (testdata/icebird/read.mjs) signs for
	return e
}

func (e *env) config(keep int) config.PublishConfig {
	return config.PublishConfig{URL: "s3://" + e.bucket + "/lake", Endpoint: e.s3.Endpoint, Region: "us-east-1", PathStyle: true,
		Format: config.FormatIceberg, Catalog: e.pg.URL, Namespace: "sitewatch", KeepSnapshots: keep}
}

// getenv is the environment of the catalog password.
func (e *env) getenv(k string) string {
	if k == config.EnvCatalogPassword {
		return e.pg.Password
	}
	return ""
}

func (e *env) publisher(t *testing.T, keep int) *Publisher {
	t.Helper()
	p, err := New(context.Background(), e.config(keep), Options{Getenv: e.getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// objects lists the keys under prefix in the bucket.
func (e *env) objects(t *testing.T, prefix string) []string {
	t.Helper()
	var keys []string
	pg := s3.NewListObjectsV2Paginator(e.s3.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix)})
	for pg.HasMorePages() {
		out, err := pg.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	slices.Sort(keys)
	return keys
}

// icebird reads table's snapshot as of metadataFile with the npm package icebird, through a
// fetch confined to the gateway, and returns its rows.
func (e *env) icebird(t *testing.T, tableLocation, metadataFile string) []map[string]any {
	t.Helper()
	return e.icebirdAll(t, [][2]string{{tableLocation, metadataFile}})[0]
}

// icebirdAll reads several (table location, metadata file) snapshots in one node process.
func (e *env) icebirdAll(t *testing.T, snaps [][2]string) [][]map[string]any {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "icebird"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "icebird")); err != nil {
		testenv.Missing(t, "icebird is not installed: run `npm ci` in %s", dir)
	}
	args := []string{"read.mjs"}
	for _, s := range snaps {
		args = append(args, s[0], path.Base(s[1]))
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "S3_ENDPOINT="+e.s3.Endpoint)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("icebird read %v: %v\n%s", snaps, err, stderr.String())
	}
	rows := make([][]map[string]any, len(snaps))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var r struct {
			T   int            `json:"t"`
			Row map[string]any `json:"row"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.T < 0 || r.T >= len(snaps) {
			t.Fatalf("icebird row %q: %v", line, err)
		}
		rows[r.T] = append(rows[r.T], r.Row)
	}
	return rows
}

// warehouseCounts returns the rows per month of table in the fixture's warehouse.
func warehouseCounts(t *testing.T, f publishtest.Fixture, table string) map[string]int {
	t.Helper()
	db, err := sql.Open("duckdb", f.DB()+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT snapshot_month, count(*) FROM %s GROUP BY 1`, table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var m string
		var n int
		if err := rows.Scan(&m, &n); err != nil {
			t.Fatal(err)
		}
		got[m] = n
	}
	return got
}

// countByMonth counts rows by their snapshot_month.
func countByMonth(rows []map[string]any) map[string]int {
	got := map[string]int{}
	for _, r := range rows {
		m, _ := r[monthColumn].(string)
		got[m]++
	}
	return got
}
