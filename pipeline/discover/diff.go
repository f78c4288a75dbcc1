package discover

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// diffContext is the number of unchanged lines shown around the added ones, as diff -u.
const diffContext = 3

// WriteDiff writes the unified diff (diff -u) between old and the file with adds inserted,
// as `--dry-run` shows it. The additions are one block of consecutive lines, so the diff is
// one hunk. Line ends are not shown.
func WriteDiff(w io.Writer, path string, old []byte, adds []Addition) error {
	if len(adds) == 0 {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	if len(old) == 0 {
		lines = nil
	}
	at := adds[0].Line - 1 // 0-based index in old of the first line after the insertion
	from, to := max(at-diffContext, 0), min(at+diffContext, len(lines))
	var b bytes.Buffer
	fmt.Fprintf(&b, "--- %s\n+++ %s\n@@ -%d,%d +%d,%d @@\n", path, path, from+1, to-from, from+1, to-from+len(adds))
	for _, l := range lines[from:at] {
		b.WriteString(" " + strings.TrimSuffix(l, "\r") + "\n")
	}
	for _, a := range adds {
		b.WriteString("+" + a.Text + "\n")
	}
	for _, l := range lines[at:to] {
		b.WriteString(" " + strings.TrimSuffix(l, "\r") + "\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}
