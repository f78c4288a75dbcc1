package main

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strings"
	"text/tabwriter"
	"time"
)

// formatter writes a query result in one output format.
type formatter interface {
	header(cols []string) error
	row(vals []any) error
	end() error
}

func newFormatter(format string, w io.Writer) (formatter, error) {
	switch format {
	case "table":
		return &tableFormatter{w: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}, nil
	case "csv":
		return &csvFormatter{w: csv.NewWriter(w)}, nil
	case "json":
		return &jsonFormatter{w: w}, nil
	}
	return nil, &UsageError{Msg: fmt.Sprintf("--format %q: use table, csv or json", format)}
}

// runQuery runs one SQL statement and streams its rows to out.
func runQuery(ctx context.Context, db *sql.DB, query string, out formatter) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("query failed: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if err := out.header(cols); err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read row: %w", err)
		}
		if err := out.row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query failed: %w", err)
	}
	return out.end()
}

// textOf renders a value for table and CSV output; NULL is empty in CSV and "NULL" in tables.
func textOf(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case []byte:
		return string(x)
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02")
		}
		return x.UTC().Format("2006-01-02 15:04:05")
	case float64:
		return fmt.Sprint(x)
	case *big.Int:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

type tableFormatter struct {
	w *tabwriter.Writer
	n int
}

func (t *tableFormatter) header(cols []string) error {
	_, err := fmt.Fprintln(t.w, strings.Join(cols, "\t"))
	return err
}

func (t *tableFormatter) row(vals []any) error {
	cells := make([]string, len(vals))
	for i, v := range vals {
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(textOf(v, "NULL"))
	}
	t.n++
	_, err := fmt.Fprintln(t.w, strings.Join(cells, "\t"))
	return err
}

func (t *tableFormatter) end() error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(t.w, "(%d rows)\n", t.n)
	if err != nil {
		return err
	}
	return t.w.Flush()
}

type csvFormatter struct{ w *csv.Writer }

func (c *csvFormatter) header(cols []string) error { return c.w.Write(cols) }
func (c *csvFormatter) row(vals []any) error {
	cells := make([]string, len(vals))
	for i, v := range vals {
		cells[i] = textOf(v, "")
	}
	return c.w.Write(cells)
}
func (c *csvFormatter) end() error { c.w.Flush(); return c.w.Error() }

// jsonFormatter writes one JSON array of objects, keys in column order.
type jsonFormatter struct {
	w    io.Writer
	cols []string
	n    int
}

func (j *jsonFormatter) header(cols []string) error {
	j.cols = cols
	_, err := io.WriteString(j.w, "[")
	return err
}

func (j *jsonFormatter) row(vals []any) error {
	var b strings.Builder
	if j.n > 0 {
		b.WriteString(",")
	}
	b.WriteString("\n  {")
	for i, v := range vals {
		k, _ := json.Marshal(j.cols[i])
		val, err := json.Marshal(jsonValue(v))
		if err != nil {
			return fmt.Errorf("column %s: %w", j.cols[i], err)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(val)
	}
	b.WriteString("}")
	j.n++
	_, err := io.WriteString(j.w, b.String())
	return err
}

func (j *jsonFormatter) end() error {
	_, err := io.WriteString(j.w, "\n]\n")
	return err
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case time.Time:
		return textOf(x, "")
	case *big.Int:
		return x.String()
	}
	return v
}
