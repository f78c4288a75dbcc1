package fencesim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"sitewatch/pipeline/answerlog"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
)

// bucket is an object store in memory with S3's conditional writes (If-None-Match: * and
// If-Match on PUT, If-Match on DELETE), ETags, GET and LIST, and one fault: a machine cut
// from it. A cut machine's requests hang until the cut heals (then they go through) or
// their context ends; a write sent during a cut lands at once in one case of three though
// its answer is lost, as when a connection drops after the server acted, and one its sender
// gave up on lands after the heal in one case of three, as a stalled connection's may.
type bucket struct {
	seed uint64

	late sync.WaitGroup // writes landing after a heal (landLate)

	mu    sync.Mutex
	objs  map[string]object
	etags int
	cuts  map[cutKey]*cut // while cut
}

type object struct {
	body []byte
	etag string
}

// cutKey names a cut: of machine m from the whole bucket, or (logOnly) from writing the
// answer log's segments alone, as when the service refuses or throttles those PUTs while the
// lease's requests go through.
type cutKey struct {
	m       int
	logOnly bool
}

// cut is one machine's open cut: healed closes when the last of its overlapping cuts heals.
type cut struct {
	depth  int
	healed chan struct{}
}

func newBucket(seed uint64) *bucket {
	return &bucket{seed: seed, objs: map[string]object{}, cuts: map[cutKey]*cut{}}
}

// cut cuts k until as many heals as cuts.
func (b *bucket) cut(k cutKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cuts[k]
	if c == nil {
		c = &cut{healed: make(chan struct{})}
		b.cuts[k] = c
	}
	c.depth++
}

// heal ends one cut k; it reports whether it was the last.
func (b *bucket) heal(k cutKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cuts[k]
	if c == nil {
		return true
	}
	if c.depth--; c.depth > 0 {
		return false
	}
	close(c.healed)
	delete(b.cuts, k)
	return true
}

// requestLatency is every request's round trip: not a whole number of milliseconds, so that
// the answer log's ticker, which starts after the run's pull, never fires at the instant of
// one of the lease's timers (they would race: a seed would not replay).
const requestLatency = time.Millisecond + 7*time.Microsecond

// errAnswerLost is the error of a request that reached the bucket during a cut whose answer
// never came back.
var errAnswerLost = errors.New("the connection to the bucket was reset (the request may have landed)")

// lands decides, the same way every time for one request at one instant, whether a write
// sent by machine m during a cut landed: drawn from the request itself, not from a stream
// several goroutines share, so a seed replays whatever order they send in.
func (b *bucket) lands(m int, op, key string, at time.Time) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s|%s|%d", m, op, key, at.UnixNano())
	return rand.New(rand.NewPCG(b.seed, h.Sum64())).IntN(3) == 0
}

// client is the bucket as machine m sees it; it implements lease.Bucket and answerlog.Bucket.
type client struct {
	b *bucket
	m int
}

var (
	_ lease.Bucket     = client{}
	_ answerlog.Bucket = client{}
)

// do runs op (under the bucket's lock) for machine m after a round trip: at once when no
// cut stops the request; when one does, a write lands now in one case of three (its answer
// lost), and the request hangs until the heal (then it is looked at again: another cut may
// still stop it) or ctx ends.
func (c client) do(ctx context.Context, name, key string, write bool, op func() error) error {
	if err := sleep(ctx, requestLatency); err != nil {
		return fmt.Errorf("%s %s: %w", name, key, err)
	}
	for {
		c.b.mu.Lock()
		cu := c.b.cutOf(c.m, key, write)
		if cu == nil {
			defer c.b.mu.Unlock()
			return op()
		}
		landed := write && c.b.lands(c.m, name, key, time.Now())
		if landed {
			_ = op() // its outcome is what the lost answer said
		}
		c.b.mu.Unlock()
		select {
		case <-ctx.Done():
			if write && !landed && c.b.lands(c.m, "late "+name, key, time.Now()) {
				c.b.late.Go(func() { c.landLate(cu, op) })
			}
			return fmt.Errorf("%s %s: %w", name, key, ctx.Err())
		case <-cu.healed:
		}
		if err := sleep(ctx, resumeAfterHeal(name, key)); err != nil {
			return fmt.Errorf("%s %s: %w", name, key, err)
		}
		if landed {
			return fmt.Errorf("%s %s: %w", name, key, errAnswerLost)
		}
	}
}

// resumeAfterHeal is how long after a heal a request that hung on the cut goes on: a round
// trip of its own for each request (1–2 ms, drawn from the request's name), so that the
// lease's request and the answer log's, released by one heal, do not go on at one instant
// (their goroutines would race: a seed would not replay).
func resumeAfterHeal(name, key string) time.Duration {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s", name, key)
	return time.Millisecond + time.Duration(h.Sum64()%1000)*time.Microsecond + 3*time.Nanosecond
}

// cutOf is the cut that stops machine m's request on key, if any; the caller holds b.mu.
func (b *bucket) cutOf(m int, key string, write bool) *cut {
	if cu := b.cuts[cutKey{m: m}]; cu != nil {
		return cu
	}
	if write && strings.HasPrefix(key, publish.LogDir+"/") {
		return b.cuts[cutKey{m: m, logOnly: true}]
	}
	return nil
}

// landLate makes a write its sender gave up on during a cut land after the heal, as a
// request held by a stalled connection may: in one case of three. It lands lateLanding after
// the heal, an instant no other actor acts at (see the offsets in sim_test.go).
func (c client) landLate(cu *cut, op func() error) {
	<-cu.healed
	time.Sleep(lateLanding)
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	_ = op() // nobody waits for its answer
}

// lateLanding is how long after a heal an abandoned write lands.
const lateLanding = 500 * time.Microsecond

func (c client) URL(rel string) string { return "s3://sim/" + rel }

func (c client) GetSmall(ctx context.Context, rel string) (body []byte, etag string, found bool, err error) {
	err = c.do(ctx, "GET", rel, false, func() error {
		o, ok := c.b.objs[rel]
		body, etag, found = o.body, o.etag, ok
		return nil
	})
	return body, etag, found, err
}

func (c client) ReadObject(ctx context.Context, rel string) ([]byte, bool, error) {
	body, _, found, err := c.GetSmall(ctx, rel)
	return body, found, err
}

func (c client) PutConditional(ctx context.Context, rel string, body []byte, ifMatch string) (string, error) {
	var etag string
	err := c.do(ctx, "PUT", rel, true, func() error {
		o, ok := c.b.objs[rel]
		if ifMatch == "" && ok || ifMatch != "" && (!ok || o.etag != ifMatch) {
			return publish.ErrPrecondition
		}
		c.b.etags++
		etag = fmt.Sprintf("e%d", c.b.etags)
		c.b.objs[rel] = object{body: append([]byte(nil), body...), etag: etag}
		return nil
	})
	// op runs under b.mu, and may run again after this returns (a write abandoned during a cut
	// that lands after the heal: landLate), so etag is copied under b.mu: the race detector
	// caught the unguarded read in CI.
	c.b.mu.Lock()
	got := etag
	c.b.mu.Unlock()
	return got, err
}

func (c client) DeleteConditional(ctx context.Context, rel, etag string) error {
	return c.do(ctx, "DELETE", rel, true, func() error {
		o, ok := c.b.objs[rel]
		if !ok || o.etag != etag {
			return publish.ErrPrecondition
		}
		delete(c.b.objs, rel)
		return nil
	})
}

// ListLogs lists the answer log's segments of every run, in key order (a run's in sequence).
func (c client) ListLogs(ctx context.Context) (objs []publish.LogObject, err error) {
	err = c.do(ctx, "LIST", publish.LogDir, false, func() error {
		objs = c.b.logObjects()
		return nil
	})
	return objs, err
}

// logObjects lists the segments; the caller holds b.mu.
func (b *bucket) logObjects() []publish.LogObject {
	var objs []publish.LogObject
	for key, o := range b.objs {
		rest, ok := strings.CutPrefix(key, publish.LogDir+"/snapshot_month=")
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		objs = append(objs, publish.LogObject{Key: key, ETag: o.etag, Month: parts[0], RunID: parts[1]})
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs
}
