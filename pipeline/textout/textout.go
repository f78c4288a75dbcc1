// Package textout is a writer for text meant for people (command output, digests, the data
// dictionary) that keeps the first write error, so a writer prints line after line and checks
// once at the end: a closed pipe or a full disk still makes the command fail.
package textout

import (
	"fmt"
	"io"
	"strings"
)

// Writer writes to an io.Writer until the first error, which it keeps.
type Writer struct {
	w   io.Writer
	err error
}

// New returns a Writer on w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p unless an earlier write failed; it returns that first error after a failure.
func (o *Writer) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.err = err
	return n, err
}

// Printf formats and writes; a failure is kept for Err.
func (o *Writer) Printf(format string, args ...any) { _, _ = fmt.Fprintf(o, format, args...) }

// Println writes args and a newline; a failure is kept for Err.
func (o *Writer) Println(args ...any) { _, _ = fmt.Fprintln(o, args...) }

// Keep records err (the flush of a writer stacked on this one, such as a tabwriter) unless
// an error is already kept.
func (o *Writer) Keep(err error) {
	if o.err == nil {
		o.err = err
	}
}

// Err is the first error met, or nil.
func (o *Writer) Err() error { return o.err }

// Plural writes a count with its noun in the right number: Plural(1, "domain", "domains") is
// "1 domain", Plural(0, …) and Plural(2, …) "0 domains", "2 domains".
func Plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Thousands writes n with comma thousands separators: 1,234,567 (commands, the report, plans).
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
