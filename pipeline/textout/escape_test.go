package textout

import (
	"strings"
	"testing"
)

// TestEscape: the control characters a hostile site title can carry (ESC [2J clears the
// screen, ESC ] 0 ; … BEL retitles the window, a C1 CSI acts like ESC [ on some terminals)
// come out as visible escapes; printable text, accents and emoji are untouched.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want, text string }{
		{"plain café ✓", "plain café ✓", "plain café ✓"},
		{"evil\x1b[2Jtitle", `evil\x1b[2Jtitle`, `evil\x1b[2Jtitle`},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\a`, `\x1b]0;pwned\a`},
		{"a\tb\nc\rd", `a\tb\nc\rd`, "a\tb\nc\\rd"},
		{"del\x7f nul\x00", `del\x7f nul\x00`, `del\x7f nul\x00`},
		{"csi\u009b2J", `csi\u009b2J`, `csi\u009b2J`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := EscapeText(c.in); got != c.text {
			t.Errorf("EscapeText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// TestTerminalHoldsASplitRune writes a title byte by byte: a multi-byte rune split across
// writes comes out whole, a control character is escaped, and Flush writes a trailing
// incomplete rune as escaped bytes instead of dropping it.
func TestTerminalHoldsASplitRune(t *testing.T) {
	var b strings.Builder
	term := NewTerminal(&b)
	in := "café \x1b[2J ✓\u009b\n"
	for i := 0; i < len(in); i++ {
		if n, err := term.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if _, err := term.Write([]byte{0xe2, 0x9c}); err != nil { // the first two bytes of ✓
		t.Fatal(err)
	}
	if err := term.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "café \\x1b[2J ✓\\u009b\n\\xe2\\x9c"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

// TestTableEscapesAndAligns: a title holding ESC [2J lands escaped in its cell, and the
// figures column is right-aligned.
func TestTableEscapesAndAligns(t *testing.T) {
	tab := Table{Header: []string{"domain", "visits", "title"}, Right: []bool{false, true}}
	tab.Add("a.com", "1.20M", "evil\x1b[2J\x1b]0;pwned\a")
	tab.Add("bb.com", "950", "fine")
	var b strings.Builder
	if err := tab.Write(&b, "  "); err != nil {
		t.Fatal(err)
	}
	want := "  domain  visits  title\n  ------  ------  -------------------------\n" +
		"  a.com    1.20M  evil\\x1b[2J\\x1b]0;pwned\\a\n  bb.com     950  fine\n"
	if b.String() != want {
		t.Errorf("table\n%s\nwant\n%s", b.String(), want)
	}
}
