package textout

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Table is a text table for a terminal: a header, a rule, then rows, columns two spaces
// apart, the columns named in Right right-aligned (figures), every cell escaped (Escape: the
// data never drives the terminal). Figures arrive formatted (pipeline/numfmt).
type Table struct {
	Header []string
	Right  []bool // per column; missing entries are left-aligned
	rows   [][]string
}

// Add appends a row; missing cells are empty.
func (t *Table) Add(cells ...string) {
	row := make([]string, len(t.Header))
	for i := range row {
		if i < len(cells) {
			row[i] = Escape(cells[i])
		}
	}
	t.rows = append(t.rows, row)
}

// Len is the number of rows added.
func (t *Table) Len() int { return len(t.rows) }

// Write writes the table, each line indented by indent.
func (t *Table) Write(w io.Writer, indent string) error {
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	rule := make([]string, len(widths))
	for i, n := range widths {
		rule[i] = strings.Repeat("-", n)
	}
	t.line(&b, indent, t.Header, widths)
	b.WriteString(indent + strings.Join(rule, "  ") + "\n")
	for _, r := range t.rows {
		t.line(&b, indent, r, widths)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Table) line(b *strings.Builder, indent string, cells []string, widths []int) {
	b.WriteString(indent)
	for i, c := range cells {
		pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
		switch {
		case i < len(t.Right) && t.Right[i]:
			b.WriteString(pad + c)
		case i < len(cells)-1:
			b.WriteString(c + pad)
		default:
			b.WriteString(c)
		}
		if i < len(cells)-1 {
			b.WriteString("  ")
		}
	}
	b.WriteString("\n")
}
