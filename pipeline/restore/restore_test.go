package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/pipeline/restore"
)

func source(t *testing.T) (*publish.Publisher, *s3test.Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	srv := s3test.Start(t)
	srv.CreateBucket(t, "restore-src")
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey,
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none")} {
		t.Setenv(k, v)
	}
	p, err := publish.New(context.Background(), config.PublishConfig{URL: "s3://restore-src/p", Endpoint: srv.Endpoint, Region: "us-east-1", PathStyle: true}, publish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, srv
}

// TestRefusals: an empty bucket, a schema newer than this build, and a key leaving the tree
// are refused, and none leaves a warehouse file.
func TestRefusals(t *testing.T) {
	p, srv := source(t)
	dir := t.TempDir()
	opts := restore.Options{DuckDB: filepath.Join(dir, "w.duckdb"), Parquet: filepath.Join(dir, "parquet")}
	ctx := context.Background()
	if _, err := restore.Run(ctx, p, opts); !errors.Is(err, restore.ErrNothingPublished) {
		t.Errorf("empty bucket: %v, want ErrNothingPublished", err)
	}
	put := func(body string) {
		t.Helper()
		if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("restore-src"), Key: aws.String("p/_manifests/snapshot_month=2026-10.json"), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put(`{"format":1,"snapshot_month":"2026-10","schema_version":"9999_future.sql","files":[]}`)
	if _, err := restore.Run(ctx, p, opts); err == nil || !strings.Contains(err.Error(), "upgrade sitewatch") {
		t.Errorf("newer schema: %v, want a refusal saying to upgrade", err)
	}
	put(`{"format":1,"snapshot_month":"2026-10","files":[{"key":"../../etc/x.parquet","table":"sites","size":1,"sha256":"00"}]}`)
	if _, err := restore.Run(ctx, p, opts); !errors.Is(err, publish.ErrDamaged) || !strings.Contains(err.Error(), "../../etc/x.parquet") {
		t.Errorf("key leaving the tree: %v, want a refusal naming it", err)
	}
	twice := `{"key":"raw_responses/snapshot_month=2026-10/data_0.parquet","table":"raw_responses","size":5,"sha256":"00"}`
	put(`{"format":1,"snapshot_month":"2026-10","files":[` + twice + `,` + twice + `]}`)
	_, err := restore.Run(ctx, p, opts)
	var dup *publish.DuplicateError
	if !errors.As(err, &dup) || !strings.Contains(err.Error(), "raw_responses/snapshot_month=2026-10/data_0.parquet") {
		t.Errorf("a key listed twice: %v, want a refusal naming it", err)
	}
	put(`{"format":1,"snapshot_month":"2026-11","files":[]}`)
	if _, err := restore.Run(ctx, p, opts); !errors.Is(err, publish.ErrDamaged) || !strings.Contains(err.Error(), `snapshot_month "2026-11"`) {
		t.Errorf("a manifest of another month than its name: %v, want a refusal naming it", err)
	}
	if _, err := os.Stat(filepath.Join(opts.Parquet, "raw_responses")); err == nil {
		t.Error("a refused manifest's objects were downloaded")
	}
	if _, err := os.Stat(opts.DuckDB); err == nil {
		t.Error("a refused restore left a warehouse file")
	}
}

// TestCompleteMonthWinsOverItsCopy: a publish killed between writing a month's manifest and
// deleting its restore copy leaves both; restore takes the complete month and never reads the
// copy, while a month held only as a copy is read (and a damaged copy object named).
func TestCompleteMonthWinsOverItsCopy(t *testing.T) {
	p, srv := source(t)
	ctx := context.Background()
	put := func(key, body string) {
		t.Helper()
		if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("restore-src"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	missing := `"files":[{"key":"raw_responses/snapshot_month=%s/data_0.parquet","table":"raw_responses","size":5,"sha256":"00"}]}`
	put("p/_manifests/snapshot_month=2026-10.json", `{"format":1,"snapshot_month":"2026-10","files":[]}`)
	put("p/_restore/_manifests/snapshot_month=2026-10.json", `{"format":1,"snapshot_month":"2026-10",`+strings.ReplaceAll(missing, "%s", "2026-10"))
	dir := t.TempDir()
	opts := restore.Options{DuckDB: filepath.Join(dir, "w.duckdb"), Parquet: filepath.Join(dir, "parquet"), Copies: p.RestoreCopies()}
	put("p/_manifests/README.json", `{"note":"a user's file: not a manifest"}`)
	put("p/_manifests/snapshot_month=2026-10.json.bak", `{}`)
	res, err := restore.Run(ctx, p, opts)
	if err != nil {
		t.Fatalf("restore read the copy of a month the bucket holds complete, or refused a user's file under _manifests/: %v", err)
	}
	if len(res.FromCopies) != 0 {
		t.Errorf("restored from copies: %v, want none", res.FromCopies)
	}
	put("p/_restore/_manifests/snapshot_month=2026-11.json", `{"format":1,"snapshot_month":"2026-11",`+strings.ReplaceAll(missing, "%s", "2026-11"))
	opts.Force = true
	_, err = restore.Run(ctx, p, opts)
	if !errors.Is(err, publish.ErrDamaged) || !strings.Contains(err.Error(), "_restore/raw_responses/snapshot_month=2026-11") {
		t.Errorf("a copy's missing object: %v, want ErrDamaged naming it", err)
	}
}
