package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// LogDir is the folder of the answer log (pipeline/answerlog) under the prefix, beside the
// restore copies: one immutable segment per cut of a run holding the lease,
//
//	_restore/_log/snapshot_month=M/<run_id>/<seq>.json.zst
//
// Publishing month M (or its restore copy) folds the segments it read into its tables and
// deletes them.
const LogDir = RestoreCopyDir + "/_log"

// LogObject is one segment of the answer log as listed.
type LogObject struct {
	Key   string // relative to the prefix
	ETag  string // without quotes
	Month string
	RunID string
}

// logObject parses a key of the answer log: LogDir/snapshot_month=M/<run>/<file>.
func logObject(rel, etag string) (LogObject, bool) {
	rest, ok := strings.CutPrefix(rel, LogDir+"/snapshot_month=")
	if !ok {
		return LogObject{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || !monthRE.MatchString(parts[0]) || parts[1] == "" || parts[2] == "" {
		return LogObject{}, false
	}
	return LogObject{Key: rel, ETag: etag, Month: parts[0], RunID: parts[1]}, true
}

// LogKey is the key of segment seq of run in month.
func LogKey(month, run string, seq int) string {
	return path.Join(LogDir, "snapshot_month="+month, run, fmt.Sprintf("%08d.json.zst", seq))
}

// maxLogObject bounds what ReadObject reads of one segment.
const maxLogObject = 256 << 20

// ReadObject returns the whole object at rel; found is false when there is none.
func (p *Publisher) ReadObject(ctx context.Context, rel string) (body []byte, found bool, err error) {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel))})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, false, nil
		}
		return nil, false, p.fail("read", rel, err)
	}
	defer func() { _ = out.Body.Close() }() // read-only
	body, err = io.ReadAll(io.LimitReader(out.Body, maxLogObject))
	if err != nil {
		return nil, false, p.fail("read", rel, err)
	}
	return body, true, nil
}

// foldLogs deletes the answer log's segments of month that the warehouse of the tree at root
// holds (Options.FoldLogs): the manifest just written or found current holds their rows. A
// segment another machine wrote after this warehouse's pull is not in the state: it stays
// for the next pull. A failure leaves segments behind (a later publish removes them; a pull
// merges them again, which adds nothing): it is logged, never an error of the publish.
func (p *Publisher) foldLogs(ctx context.Context, root, month string) {
	if !p.opts.FoldLogs || p.url == "" || month == "" {
		return
	}
	st := LoadSyncState(root, p.url, p.log)
	var gone []string
	for key, l := range st.Logs {
		if l.Month != month {
			continue
		}
		rel := key
		if p.statePrefix != "" {
			rel = strings.TrimPrefix(key, p.statePrefix+"/")
		}
		var err error
		if l.ETag != "" {
			err = p.DeleteConditional(ctx, rel, l.ETag)
		} else {
			err = p.delete(ctx, rel)
		}
		if err != nil && !errors.Is(err, ErrPrecondition) { // precondition: gone already
			p.log.Warn("could not remove a folded answer log segment; a later publish does", "url", p.loc.URL(rel), "err", err)
			continue
		}
		gone = append(gone, key)
	}
	if len(gone) == 0 {
		return
	}
	if err := DropLogs(root, p.url, gone); err != nil {
		p.log.Warn("could not record the answer log segments removed", "file", SyncStateFile, "err", err)
	}
	p.log.Info("folded the answer log into the month and removed its segments", "month", month, "segments", len(gone))
}
