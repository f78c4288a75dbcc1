package textout

import (
	"errors"
	"strings"
	"testing"
	"text/tabwriter"
)

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	got strings.Builder
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		return 0, errFull
	}
	return f.got.Write(p)
}

func TestKeepsTheFirstError(t *testing.T) {
	dst := &failAfter{n: 6}
	o := New(dst)
	o.Printf("%s\n", "hello")
	o.Println("world")
	o.Printf("more\n")
	if !errors.Is(o.Err(), errFull) {
		t.Fatalf("Err() = %v, want the failed write's error", o.Err())
	}
	if got := dst.got.String(); got != "hello\n" {
		t.Errorf("written %q, want only what fitted before the failure", got)
	}
	o.Keep(errors.New("later"))
	if !errors.Is(o.Err(), errFull) {
		t.Errorf("Keep replaced the first error: %v", o.Err())
	}
}

func TestKeepRecordsAFlushError(t *testing.T) {
	o := New(&failAfter{n: 0})
	tw := tabwriter.NewWriter(o, 0, 0, 2, ' ', 0)
	_, _ = tw.Write([]byte("a\tb\n"))
	o.Keep(tw.Flush())
	if !errors.Is(o.Err(), errFull) {
		t.Errorf("Err() = %v, want the flush's error", o.Err())
	}
	ok := New(&strings.Builder{})
	ok.Keep(nil)
	ok.Println("fine")
	if ok.Err() != nil {
		t.Errorf("Err() = %v on a writer that never failed", ok.Err())
	}
}

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 domains"}, {1, "1 domain"}, {2, "2 domains"}, {-1, "-1 domains"}} {
		if got := Plural(tt.n, "domain", "domains"); got != tt.want {
			t.Errorf("Plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -2000: "-2,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
