package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"sitewatch/pipeline/textout"
)

// formatter writes one query result in one output format.
type formatter interface {
	header(cols []column) error
	row(vals []any) error
	end() error
}

func newFormatter(format string, w io.Writer, raw bool) (formatter, error) {
	switch format {
	case "table":
		return &tableFormatter{w: w, raw: raw}, nil
	case "csv":
		return &csvFormatter{w: csv.NewWriter(w), style: valueStyle{fullBlob: raw}}, nil
	case "json":
		return &jsonFormatter{w: w, style: valueStyle{fullBlob: raw}}, nil
	}
	return nil, &UsageError{Msg: fmt.Sprintf("--format %q: use table, csv or json", format)}
}

// maxCell bounds a table cell (in characters) unless --raw; csv and json are never cut.
const maxCell = 80

// tableFormatter writes an aligned table: numbers right-aligned with thousands separators
// (plain with --raw), text left-aligned, NULL written as NULL, then the row count. It holds
// the rows until the end, since a column's width is known only then.
type tableFormatter struct {
	w     io.Writer
	raw   bool
	cols  []column
	cells [][]string
}

func (t *tableFormatter) header(cols []column) error {
	t.cols = cols
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = textout.Escape(c.name)
	}
	t.cells = append(t.cells, names)
	return nil
}

func (t *tableFormatter) row(vals []any) error {
	st := valueStyle{grouped: !t.raw, fullBlob: t.raw}
	cells := make([]string, len(vals))
	for i, v := range vals {
		cells[i] = t.cell(textOf(v, t.cols[i].typ, st))
	}
	t.cells = append(t.cells, cells)
	return nil
}

// cell makes a value fit on one line of a table cell, its control characters escaped
// (textout.Escape: the data never drives the terminal).
func (t *tableFormatter) cell(s string) string {
	s = textout.Escape(strings.ReplaceAll(s, "\r\n", "\n"))
	if !t.raw && utf8.RuneCountInString(s) > maxCell {
		s = string([]rune(s)[:maxCell-1]) + "…"
	}
	return s
}

func (t *tableFormatter) end() error {
	for i, c := range t.cols {
		if c.typ.name == "DOUBLE" || c.typ.name == "FLOAT" {
			t.alignDecimals(i)
		}
	}
	widths := make([]int, len(t.cols))
	for _, r := range t.cells {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for n, r := range t.cells {
		t.writeLine(&b, r, widths)
		if n == 0 {
			rule := make([]string, len(widths))
			for i, w := range widths {
				rule[i] = strings.Repeat("-", w)
			}
			b.WriteString(strings.Join(rule, "  ") + "\n")
		}
	}
	rows := len(t.cells) - 1
	fmt.Fprintf(&b, "(%d %s)\n", rows, map[bool]string{true: "row", false: "rows"}[rows == 1])
	_, err := io.WriteString(t.w, b.String())
	return err
}

// alignDecimals pads a float column's values to the same number of decimals (5 and 22.5 print
// as 5.0 and 22.5, as DuckDB shows them), so the decimal points line up.
func (t *tableFormatter) alignDecimals(col int) {
	decimals := 0
	for _, r := range t.cells[1:] {
		c := r[col]
		if strings.ContainsAny(c, "eNI") { // exponent forms, NaN, Infinity, NULL: left as they are
			continue
		}
		if i := strings.IndexByte(c, '.'); i >= 0 {
			decimals = max(decimals, len(c)-i-1)
		}
	}
	if decimals == 0 {
		return
	}
	for _, r := range t.cells[1:] {
		c := r[col]
		if strings.ContainsAny(c, "eNI") {
			continue
		}
		if !strings.Contains(c, ".") {
			c += "."
		}
		r[col] = c + strings.Repeat("0", decimals-(len(c)-strings.IndexByte(c, '.')-1))
	}
}

func (t *tableFormatter) writeLine(b *strings.Builder, cells []string, widths []int) {
	line := make([]string, len(cells))
	for i, c := range cells {
		pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
		if t.cols[i].typ.numeric() {
			line[i] = pad + c
		} else if i < len(cells)-1 {
			line[i] = c + pad
		} else {
			line[i] = c
		}
	}
	b.WriteString(strings.TrimRight(strings.Join(line, "  "), " ") + "\n")
}

// csvFormatter writes RFC 4180 CSV with a header row; NULL is an empty field and numbers are
// plain (no separators), so spreadsheets and scripts read them as numbers.
type csvFormatter struct {
	w     *csv.Writer
	style valueStyle
	cols  []column
}

func (c *csvFormatter) header(cols []column) error {
	c.cols = cols
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.name
	}
	return c.w.Write(names)
}

func (c *csvFormatter) row(vals []any) error {
	cells := make([]string, len(vals))
	for i, v := range vals {
		if v != nil {
			cells[i] = textOf(v, c.cols[i].typ, c.style)
		}
	}
	return c.w.Write(cells)
}

func (c *csvFormatter) end() error { c.w.Flush(); return c.w.Error() }

// jsonFormatter writes one JSON array of objects, keys in column order, one row per line.
type jsonFormatter struct {
	w     io.Writer
	style valueStyle
	cols  []column
	n     int
}

func (j *jsonFormatter) header(cols []column) error {
	j.cols = cols
	_, err := io.WriteString(j.w, "[")
	return err
}

func (j *jsonFormatter) row(vals []any) error {
	var b []byte
	if j.n > 0 {
		b = append(b, ',')
	}
	b = append(b, "\n  {"...)
	for i, v := range vals {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSONString(b, j.cols[i].name)
		b = append(b, ": "...)
		b = appendJSON(b, v, j.cols[i].typ, j.style)
	}
	b = append(b, '}')
	j.n++
	_, err := j.w.Write(b)
	return err
}

func (j *jsonFormatter) end() error {
	end := "\n]\n"
	if j.n == 0 {
		end = "]\n"
	}
	_, err := io.WriteString(j.w, end)
	return err
}

// toTerminal runs write on a writer that escapes control characters from the data
// (textout.Terminal) before they reach w: every text surface (changes, show, discover, status)
// writes through it; CSV and JSON go to w unchanged.
func toTerminal(w io.Writer, write func(io.Writer) error) error {
	t := textout.NewTerminal(w)
	err := write(t)
	if ferr := t.Flush(); err == nil {
		err = ferr
	}
	return err
}
