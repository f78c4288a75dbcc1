package textout

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every control character written as an escape, the way git and ls
// quote a file name for a terminal: \a \b \t \n \v \f \r by name, other C0 controls, DEL and
// invalid UTF-8 bytes as \xNN, C1 controls (U+0080-U+009F, which some terminals obey like ESC
// sequences) as \u0080. Answers are third-party data: a site title holding ESC [2J or an OSC
// title sequence must not clear or retitle the analyst's terminal. Text tables use it; CSV and
// JSON keep the data exact.
func Escape(s string) string { return escape(s, false) }

// EscapeText is Escape keeping newlines and tabs: for text that is laid out in lines and
// columns (a digest, a tabwriter's output) after its fields were written into it.
func EscapeText(s string) string { return escape(s, true) }

var named = map[rune]string{'\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`}

func escape(s string, keepLayout bool) string {
	if !needsEscape(s, keepLayout) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case named[r] != "":
			b.WriteString(named[r])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, keepLayout bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return true
		case keepLayout && (r == '\n' || r == '\t'):
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return true
		}
		i += size
	}
	return false
}

// Terminal is a writer for text shown at a terminal that escapes what EscapeText escapes in
// everything written through it, so a command's table or digest never passes a control
// character from the data to the terminal, whichever field held it. A rune split across two
// writes is held until the next write completes it; Flush writes a held incomplete rune as
// escaped bytes.
type Terminal struct {
	w    io.Writer
	held []byte
}

// NewTerminal returns a Terminal writing to w.
func NewTerminal(w io.Writer) *Terminal { return &Terminal{w: w} }

// Write escapes p and writes it; it reports len(p) on success.
func (t *Terminal) Write(p []byte) (int, error) {
	buf := append(t.held, p...)
	t.held = nil
	cut := len(buf)
	// Hold an incomplete (but possibly valid) rune at the end for the next write.
	for k := 1; k <= 3 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	t.held = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, EscapeText(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete rune (escaped as the invalid bytes it is).
func (t *Terminal) Flush() error {
	if len(t.held) == 0 {
		return nil
	}
	s := EscapeText(string(t.held))
	t.held = nil
	_, err := io.WriteString(t.w, s)
	return err
}
