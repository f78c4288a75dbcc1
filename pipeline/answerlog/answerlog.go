// Package answerlog keeps every paid answer in the bucket within seconds of its commit: while
// a run holds the lease, what it commits (answers, ledger rows, the API's rejections) goes to
// the bucket as small immutable segments (publish.LogDir), written with If-None-Match: *,
// one write in flight, at least every publish.log_interval and at every lease renewal. The
// lease's fence takes the log as its second reason: a holder whose log cannot write within
// log_interval plus the fence's margin admits no paid call until it can.
//
// Every pull (a run's sync, restore, check, dry runs) reads the segments of every run and
// counts them as held; publishing a month folds the segments it read into its tables and
// deletes them. So what a takeover can pay again is bounded by what the payer paid after its
// last acknowledged segment (docs/sharing.md states the bound).
package answerlog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

// Bucket is what the answer log needs of the bucket; *publish.Publisher implements it.
type Bucket interface {
	PutConditional(ctx context.Context, rel string, body []byte, ifMatch string) (string, error)
	ReadObject(ctx context.Context, rel string) ([]byte, bool, error)
	DeleteConditional(ctx context.Context, rel, etag string) error
	URL(rel string) string
}

var _ Bucket = (*publish.Publisher)(nil)

// segmentVersion is the format of a segment's content.
const segmentVersion = 1

// segment is the content of one object of the log (zstd-compressed JSON).
type segment struct {
	Version int               `json:"v"`
	RunID   string            `json:"run_id"`
	Seq     int               `json:"seq"`
	Month   string            `json:"snapshot_month"`
	Rows    warehouse.LogRows `json:"rows"`
}

// coder compresses and decompresses every segment: one encoder and one decoder for the
// process (both safe for concurrent use). A new encoder per segment allocated its tables at
// every log_interval, and was most of the in-process simulation's time (pipeline/fencesim).
// Both are made and first used at init: their lazily made channels then belong to no test's
// synctest bubble (a channel made in one bubble may not be used from another).
var coder = newCoder()

type zstdCoder struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newCoder() zstdCoder {
	c := zstdCoder{
		enc: must(zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))),
		dec: must(zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxSegment))),
	}
	_ = must(c.dec.DecodeAll(c.enc.EncodeAll([]byte("{}"), nil), nil))
	return c
}

// maxSegment bounds a segment's decompressed content.
const maxSegment = 1 << 30

func must[T any](v T, err error) T {
	if err != nil { // only for options out of range, or a coder that cannot read its own output: a bug
		panic(err)
	}
	return v
}

func encode(s segment) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return coder.enc.EncodeAll(body, nil), nil
}

func decode(body []byte) (segment, error) {
	plain, err := coder.dec.DecodeAll(body, nil)
	if err != nil {
		return segment{}, err
	}
	var s segment
	if err := json.Unmarshal(plain, &s); err != nil {
		return segment{}, err
	}
	if s.Version != segmentVersion {
		return segment{}, fmt.Errorf("segment format %d, this build reads %d: upgrade sitewatch", s.Version, segmentVersion)
	}
	return s, nil
}

// Read downloads the segments objs and returns their rows. A segment gone since the listing
// (folded by a publish) is skipped: its rows are in the month's tables. One that does not
// decode, or whose rows are not of the run and month its key names, is an error naming it.
func Read(ctx context.Context, b Bucket, objs []publish.LogObject) (warehouse.LogRows, []publish.LogObject, error) {
	var rows warehouse.LogRows
	var read []publish.LogObject
	for _, o := range objs {
		body, found, err := b.ReadObject(ctx, o.Key)
		if err != nil {
			return rows, read, fmt.Errorf("read the answer log segment %s: %w", b.URL(o.Key), err)
		}
		if !found {
			continue
		}
		s, err := decode(body)
		if err == nil {
			err = s.check(o)
		}
		if err != nil {
			return rows, read, fmt.Errorf("the answer log segment %s is damaged: %w; nothing of it was taken in (delete it if the month was published since)", b.URL(o.Key), err)
		}
		rows.Append(s.Rows)
		read = append(read, o)
	}
	return rows, read, nil
}

// check says whether s's rows are of the run and month its key o names.
func (s segment) check(o publish.LogObject) error {
	if s.RunID != o.RunID || s.Month != o.Month {
		return fmt.Errorf("it holds run %s of %s, its key names run %s of %s", s.RunID, s.Month, o.RunID, o.Month)
	}
	for _, m := range s.Rows.Months() {
		if m != o.Month {
			return fmt.Errorf("it holds rows of %s under %s", m, o.Month)
		}
	}
	return nil
}

// Save writes rows to the log as segments of their own (one per month) named by id, a name
// of its own (not a run's: the rows keep their runs), and returns the keys written.
// `restore --force` saves so the charged calls the bucket lacks before it replaces a
// warehouse.
func Save(ctx context.Context, b Bucket, id string, rows warehouse.LogRows) ([]string, error) {
	var keys []string
	for i, m := range rows.Months() {
		body, err := encode(segment{Version: segmentVersion, RunID: id, Seq: i + 1, Month: m, Rows: rows.Month(m)})
		if err != nil {
			return keys, err
		}
		key := publish.LogKey(m, id, i+1)
		if _, err := b.PutConditional(ctx, key, body, ""); err != nil {
			return keys, fmt.Errorf("save %d charged calls of %s to the answer log %s: %w", len(rows.Month(m).Charges), m, b.URL(key), err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}
