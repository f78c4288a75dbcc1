package publish

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"sitewatch/pipeline/model"
)

// ErrPrecondition: a conditional write found the object in another state than it required
// (If-None-Match: * and the object exists; If-Match and its ETag changed).
var ErrPrecondition = errors.New("precondition failed")

// GetSmall returns the body and ETag of the small object at rel (a lease record); found is
// false when there is none.
func (p *Publisher) GetSmall(ctx context.Context, rel string) (body []byte, etag string, found bool, err error) {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel))})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, "", false, nil
		}
		return nil, "", false, p.fail("read", rel, err)
	}
	defer func() { _ = out.Body.Close() }() // read-only
	body, err = io.ReadAll(io.LimitReader(out.Body, 1<<20))
	if err != nil {
		return nil, "", false, p.fail("read", rel, err)
	}
	return body, aws.ToString(out.ETag), true, nil
}

// PutConditional writes body at rel only if the object is absent (ifMatch "") or still has
// the ETag ifMatch, and returns the new ETag. A lost condition is ErrPrecondition.
func (p *Publisher) PutConditional(ctx context.Context, rel string, body []byte, ifMatch string) (string, error) {
	in := &s3.PutObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel)), Body: bytes.NewReader(body),
		ContentType: aws.String("application/json")}
	if ifMatch == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := p.s3.PutObject(ctx, in)
	if err != nil {
		if isPrecondition(err) {
			return "", ErrPrecondition
		}
		return "", p.fail("write", rel, err)
	}
	return aws.ToString(out.ETag), nil
}

// DeleteConditional deletes the object at rel if it still has the ETag etag.
func (p *Publisher) DeleteConditional(ctx context.Context, rel, etag string) error {
	_, err := p.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel)), IfMatch: aws.String(etag)})
	if err != nil {
		if isPrecondition(err) {
			return ErrPrecondition
		}
		return p.fail("delete", rel, err)
	}
	return nil
}

func isPrecondition(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "PreconditionFailed" || api.ErrorCode() == "ConditionalRequestConflict") {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict)
}

// guard refuses (with Options.GuardRuns) to write over old, the bucket's manifest of s's month
// (or restore copy), when it names a run this warehouse does not hold: another machine's run
// (or up-to-date probe) this warehouse never took in, whose answers and ledger the write
// would drop. Every run old's ledger holds counts (Manifest.Runs), not only the run that
// completed the month: two machines that both hold that run but each paid a probe of their
// own would otherwise overwrite each other's ledger. The local tree's runs and run_calls
// partitions of the month list every run the warehouse knows of it, its own and those it
// pulled. The ETag check of writeManifestAt covers the moment between this read and the write.
func (p *Publisher) guard(ctx context.Context, s set, old *Manifest) error {
	if !p.opts.GuardRuns || old == nil || s.month == "" {
		return nil
	}
	held, err := LocalRuns(ctx, s.root, s.month)
	if err != nil {
		return err
	}
	for _, run := range old.AllRuns() {
		if run != s.runID && !held[run] {
			return &StaleError{URL: p.loc.URL(s.rel), Month: s.month,
				Why: fmt.Sprintf("names run %s, which this warehouse does not hold (another machine ran %s after this warehouse last took the bucket in)", run, s.month)}
		}
	}
	return nil
}

// LocalRuns returns the run IDs of month in the runs and run_calls partitions of the Parquet
// tree at root (none when there is neither).
func LocalRuns(ctx context.Context, root, month string) (map[string]bool, error) {
	var files []string
	for _, table := range []string{"runs", model.TableRunCalls} {
		found, err := filepath.Glob(filepath.Join(root, table, partitionPrefix+month, "*.parquet"))
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		return map[string]bool{}, nil
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }() // in memory
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(filepath.ToSlash(f), "'", "''") + "'"
	}
	held := map[string]bool{}
	// The files are paths of the local tree with a month that matched monthRE.
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT run_id FROM read_parquet([`+strings.Join(quoted, ", ")+`], union_by_name = true)`)
	if err != nil {
		return nil, fmt.Errorf("read the runs of %s in %s: %w", month, root, err)
	}
	defer func() { _ = rows.Close() }() // read-only
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		held[id] = true
	}
	return held, rows.Err()
}

// sortedRuns is the Runs of a manifest of month published from the tree at root.
func sortedRuns(ctx context.Context, root, month string) ([]string, error) {
	if month == "" {
		return nil, nil
	}
	held, err := LocalRuns(ctx, root, month)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(held)), nil
}
