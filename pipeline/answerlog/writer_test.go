package answerlog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
)

// memBucket is a bucket of objects in memory that honours If-None-Match: *; while down, every
// request fails (a cut), after landing the PUT when landThenFail is set (an answer lost).
type memBucket struct {
	mu           sync.Mutex
	objects      map[string][]byte
	puts         int
	down         bool
	landThenFail bool
}

func (b *memBucket) PutConditional(_ context.Context, rel string, body []byte, ifMatch string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.puts++
	if b.down && !b.landThenFail {
		return "", errors.New("the storage endpoint does not answer")
	}
	if _, ok := b.objects[rel]; ok && ifMatch == "" {
		return "", publish.ErrPrecondition
	}
	b.objects[rel] = append([]byte(nil), body...)
	if b.down {
		return "", errors.New("the answer was lost")
	}
	return "etag-" + rel, nil
}

func (b *memBucket) ReadObject(_ context.Context, rel string) ([]byte, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	body, ok := b.objects[rel]
	return body, ok, nil
}

func (b *memBucket) DeleteConditional(_ context.Context, rel, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, rel)
	return nil
}

func (b *memBucket) URL(rel string) string { return "s3://test/" + rel }

func (b *memBucket) set(f func(*memBucket)) { b.mu.Lock(); f(b); b.mu.Unlock() }

// fence records the cuts the log acknowledged.
type fence struct {
	mu   sync.Mutex
	cuts []time.Time
}

func (f *fence) Logged(cut time.Time)      { f.mu.Lock(); f.cuts = append(f.cuts, cut); f.mu.Unlock() }
func (f *fence) Renewals() <-chan struct{} { return nil }
func (f *fence) last() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cuts) == 0 {
		return time.Time{}
	}
	return f.cuts[len(f.cuts)-1]
}

func answer(domain string, at time.Time) warehouse.LogRows {
	return warehouse.LogRows{
		Raws:    []warehouse.LogRaw{{SnapshotMonth: "2026-10", Domain: domain, Endpoint: schema.EndpointOverview, FetchedAt: at, Body: []byte("{}"), Encoding: "identity", RunID: "run-a"}},
		Charges: []model.Charge{{RunID: "run-a", SnapshotMonth: "2026-10", Domain: domain, Endpoint: schema.EndpointOverview, HTTPStatus: 200, Credits: 1, FetchedAt: at, Outcome: "stored"}},
	}
}

// TestWriterMovesTheFenceOnlyOnAcknowledgement (issue 42): a cut with nothing new moves the
// fence without a write; a cut is written once as an immutable segment that reads back as
// the rows committed; while the bucket does not answer the fence stays where the last
// acknowledged cut left it, the same segment is sent again (not a bigger one), and an
// attempt that landed though its answer was lost counts as written.
func TestWriterMovesTheFenceOnlyOnAcknowledgement(t *testing.T) {
	ctx := context.Background()
	b := &memBucket{objects: map[string][]byte{}}
	f := &fence{}
	now := time.Date(2026, 10, 2, 6, 0, 0, 0, time.UTC)
	w := New(b, Options{RunID: "run-a", Fence: f, Now: func() time.Time { return now }})

	w.step(ctx)
	if b.puts != 0 || !f.last().Equal(now) {
		t.Fatalf("an empty cut: %d PUTs, fence at %v; want none, the cut's time", b.puts, f.last())
	}
	now = now.Add(time.Second)
	w.Take(answer("a.example", now))
	w.step(ctx)
	if b.puts != 1 || !f.last().Equal(now) {
		t.Fatalf("a cut of one answer: %d PUTs, fence at %v; want 1, %v", b.puts, f.last(), now)
	}
	rows, read, err := Read(ctx, b, []publish.LogObject{{Key: publish.LogKey("2026-10", "run-a", 1), Month: "2026-10", RunID: "run-a"}})
	if err != nil || len(read) != 1 || len(rows.Raws) != 1 || rows.Raws[0].Domain != "a.example" || len(rows.Charges) != 1 {
		t.Fatalf("segment 1 reads back as %+v (%d read, %v)", rows, len(read), err)
	}

	lastAcked := now
	b.set(func(b *memBucket) { b.down = true })
	now = now.Add(time.Second)
	w.Take(answer("b.example", now))
	w.step(ctx)
	now = now.Add(time.Second)
	w.Take(answer("c.example", now))
	w.step(ctx)
	if !f.last().Equal(lastAcked) {
		t.Fatalf("the fence moved to %v while the bucket was down, want %v", f.last(), lastAcked)
	}
	if len(w.unacked) != 1 || w.unacked[0].seq != 2 {
		t.Fatalf("pending segments %+v, want segment 2 alone (c.example waits for the next cut)", w.unacked)
	}
	b.set(func(b *memBucket) { b.landThenFail = true })
	w.step(ctx) // lands, the answer is lost
	b.set(func(b *memBucket) { b.down, b.landThenFail = false, false })
	w.step(ctx) // sent again: the key exists, it was this write
	if !f.last().After(lastAcked) {
		t.Fatalf("the fence did not move once segment 2 was in the bucket")
	}
	w.step(ctx) // c.example's cut
	rows, _, err = Read(ctx, b, []publish.LogObject{
		{Key: publish.LogKey("2026-10", "run-a", 2), Month: "2026-10", RunID: "run-a"},
		{Key: publish.LogKey("2026-10", "run-a", 3), Month: "2026-10", RunID: "run-a"},
	})
	if err != nil || len(rows.Raws) != 2 || rows.Raws[0].Domain != "b.example" || rows.Raws[1].Domain != "c.example" {
		t.Fatalf("segments 2 and 3 read back as %+v (%v)", rows.Raws, err)
	}
}

// TestReadRefusesASegmentOfAnotherRun: a segment whose rows are not of the run its key
// names is damaged, named, and nothing of it is taken.
func TestReadRefusesASegmentOfAnotherRun(t *testing.T) {
	ctx := context.Background()
	b := &memBucket{objects: map[string][]byte{}}
	body, err := encode(segment{Version: segmentVersion, RunID: "run-b", Seq: 1, Month: "2026-10", Rows: answer("a.example", time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	key := publish.LogKey("2026-10", "run-a", 1)
	b.objects[key] = body
	_, read, err := Read(ctx, b, []publish.LogObject{{Key: key, Month: "2026-10", RunID: "run-a"}})
	if err == nil || len(read) != 0 {
		t.Fatalf("Read = %v (%d read), want an error naming the segment", err, len(read))
	}
}

// hangingBucket answers nothing: every request hangs until its context ends (a cut).
type hangingBucket struct{ memBucket }

func (b *hangingBucket) PutConditional(ctx context.Context, _ string, _ []byte, _ string) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// TestCloseKeepsItsBoundWhileTheBucketHangs: while every write hangs (a cut), Close returns
// within the write in flight (Attempt) plus its bound, every time. The loop used to take a
// tick that was ready together with Close's stop (select picks at random) and start another
// hanging write, so Close waited an Attempt more each time it lost the draw (found by
// pipeline/fencesim). Twenty closes in fake time: the old loop passes all of them once in a
// million.
func TestCloseKeepsItsBoundWhileTheBucketHangs(t *testing.T) {
	const interval, attempt, bound = 100 * time.Millisecond, time.Second, 3 * time.Second
	for i := range 20 {
		synctest.Test(t, func(t *testing.T) {
			b := &hangingBucket{memBucket{objects: map[string][]byte{}}}
			w := New(b, Options{RunID: "run-a", Interval: interval, Attempt: attempt})
			go w.Run(context.Background())
			w.Take(answer("a.example", time.Now()))
			time.Sleep(interval + time.Millisecond) // the loop's first write hangs now
			start := time.Now()
			w.Close(context.Background(), bound)
			if took := time.Since(start); took > attempt+bound {
				t.Fatalf("close %d: Close took %v while the bucket hung, want at most the write in flight (%v) plus its bound (%v)", i, took, attempt, bound)
			}
		})
	}
}
