package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/warehouse"
)

var queryHelp = help{
	summary: "run SQL on the warehouse (read-only) and print every statement's result",
	usage:   "[--config F] [--format table|csv|json] [--raw] (SQL | -f FILE | -)",
	examples: []string{
		`sitewatch query "SELECT * FROM latest_sites"`,
		`sitewatch query "SELECT domain, visits FROM traffic_monthly" --format csv > traffic.csv`,
		`sitewatch query -f docs/queries.sql`,
		`echo "SELECT 1; SELECT 2" | sitewatch query - --format json`,
	},
}

func cmdQuery(ctx context.Context, args []string, env Env) (err error) {
	f := newFlags("query", env, true, false)
	format := f.fs.String("format", "table", "output `format`: table, csv or json")
	raw := f.fs.Bool("raw", false, "plain values: no thousands separators or truncated cells in tables, whole blobs as hex")
	file := f.fs.String("f", "", "read the SQL from `file` (- for stdin)")
	f.check = func() error {
		if _, err := newFormatter(*format, io.Discard, *raw); err != nil {
			return err
		}
		switch {
		case *file != "" && len(f.args) > 0:
			return &UsageError{Msg: "pass the SQL either as an argument or with -f FILE, not both"}
		case *file == "" && len(f.args) == 0:
			return &UsageError{Msg: "no SQL: pass it as an argument, with -f FILE, or as - to read it from stdin, e.g. sitewatch query 'SELECT * FROM latest_sites'"}
		}
		return nil
	}
	cfg, err := f.parse(args, env, 0, 1)
	if err != nil {
		return err
	}
	source := *file
	if source == "" && f.args[0] == "-" {
		source = "-"
	}
	text, name, err := readSQL(source, f.args, env)
	if err != nil {
		return err
	}
	stmts := splitStatements(text)
	if len(stmts) == 0 {
		return &UsageError{Msg: fmt.Sprintf("no SQL statement in %s (only blanks or comments)", name)}
	}
	wh, err := openWarehouse(ctx, cfg, env, true)
	if err != nil {
		return heldByRun(err, cfg.Warehouse.DuckDB, env.Now())
	}
	defer closeInto(&err, wh)
	return runStatements(ctx, wh.DB(), stmts, name, func() formatter {
		out, _ := newFormatter(*format, env.Stdout, *raw) // the format was checked above
		return out
	}, env.Stdout)
}

// heldByRun turns "the warehouse is locked" into what a user waiting for a query needs when a
// run holds it: which run, how far it is and when it should end (its progress file says), never
// advice to stop a run that is spending credits. Other errors are returned unchanged.
func heldByRun(err error, duckdb string, now time.Time) error {
	if !errors.Is(err, warehouse.ErrLocked) {
		return err
	}
	live, lerr := livestatus.Read(livestatus.Path(duckdb))
	if lerr != nil || processState(live, now) != "running" {
		return err
	}
	eta := "its end is not estimated yet"
	if live.ETASeconds != nil {
		eta = "it should end in about " + time.Duration(*live.ETASeconds*float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Errorf("%w: run %s (PID %d) is loading %s, %d/%d domains so far; %s: query again then "+
		"(`sitewatch status` follows it), or read the Parquet tree meanwhile", warehouse.ErrLocked, live.RunID, live.PID, live.Month, live.Loaded, live.Total, eta)
}

// readSQL returns the SQL to run and a name for it in messages: the file's, stdin's, or the
// argument's.
func readSQL(source string, args []string, env Env) (text, name string, err error) {
	switch source {
	case "":
		return args[0], "the SQL argument", nil
	case "-":
		b, err := io.ReadAll(env.Stdin)
		if err != nil {
			return "", "", fmt.Errorf("read SQL from stdin: %w", err)
		}
		return string(b), "stdin", nil
	}
	b, err := os.ReadFile(source)
	if err != nil {
		return "", "", &UsageError{Msg: fmt.Sprintf("read SQL: %v", err)}
	}
	return string(b), source, nil
}

// runStatements runs each statement in turn and writes its result with a fresh formatter,
// results separated by a blank line (table, CSV) or a newline (JSON, one array per statement).
// It stops at the first failing statement, naming it by number and line.
func runStatements(ctx context.Context, db *sql.DB, stmts []statement, name string, newOut func() formatter, w io.Writer) error {
	for i, st := range stmts {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := runQuery(ctx, db, st.text, newOut()); err != nil {
			if len(stmts) == 1 {
				return err
			}
			return fmt.Errorf("statement %d of %d (%s line %d): %w", i+1, len(stmts), name, st.line, err)
		}
	}
	return nil
}

// runQuery runs one SQL statement and streams its rows to out.
func runQuery(ctx context.Context, db *sql.DB, query string, out formatter) (err error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err // DuckDB's message names the error class and the position
	}
	defer closeInto(&err, rows)
	types, err := rows.ColumnTypes()
	if err != nil {
		return fmt.Errorf("read the result's columns: %w", err)
	}
	cols := make([]column, len(types))
	for i, ct := range types {
		cols[i] = column{name: ct.Name(), typ: parseType(ct.DatabaseTypeName())}
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
			return fmt.Errorf("read row: %w (cast columns of types the driver cannot read, such as ARRAY, UNION or TIMETZ, to VARCHAR)", err)
		}
		if err := out.row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return out.end()
}

// statement is one SQL statement of a script and the line it starts on.
type statement struct {
	text string
	line int
}

// splitStatements cuts a script into statements at the semicolons that are outside quotes,
// comments and dollar-quoted strings. DuckDB's database/sql driver runs every statement of a
// multi-statement query but returns only the last result, so each is run on its own. Pieces
// holding nothing but blanks and comments are dropped.
func splitStatements(src string) []statement {
	var out []statement
	start, codeAt := 0, -1 // codeAt: offset of the first character that is not blank or comment
	emit := func(end int) {
		if codeAt >= 0 {
			out = append(out, statement{text: strings.TrimSpace(src[start:end]), line: 1 + strings.Count(src[:codeAt], "\n")})
		}
		start, codeAt = end+1, -1
	}
	for i := 0; i < len(src); {
		c := src[i]
		next := i + 1
		code := true
		switch {
		case c == ';':
			emit(i)
			code = false
		case c == '\'':
			next = skipQuoted(src, i, isEscapeString(src, i))
		case c == '"':
			next = skipQuoted(src, i, false)
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			next, code = skipLineComment(src, i), false
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			next, code = skipBlockComment(src, i), false
		case c == '$':
			if tag := dollarTag(src, i); tag != "" {
				next = skipDollarQuoted(src, i, tag)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			code = false
		}
		if code && codeAt < 0 {
			codeAt = i
		}
		i = next
	}
	emit(len(src))
	return out
}

// skipQuoted returns the offset after the quoted string or identifier opening at i; a doubled
// quote is part of it, and so is a backslash-escaped one in an E'...' string.
func skipQuoted(src string, i int, backslash bool) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch {
		case backslash && src[j] == '\\':
			j++
		case src[j] == q && j+1 < len(src) && src[j+1] == q:
			j++
		case src[j] == q:
			return j + 1
		}
	}
	return len(src)
}

// isEscapeString reports whether the quote at i opens an E'...' string (backslash escapes).
func isEscapeString(src string, i int) bool {
	return i > 0 && (src[i-1] == 'E' || src[i-1] == 'e') && (i == 1 || !isIdentByte(src[i-2]))
}

func skipLineComment(src string, i int) int {
	if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(src)
}

// skipBlockComment skips a /* */ comment; like PostgreSQL's parser, DuckDB's nests them.
func skipBlockComment(src string, i int) int {
	depth := 0
	for j := i; j < len(src)-1; j++ {
		switch src[j : j+2] {
		case "/*":
			depth++
			j++
		case "*/":
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(src)
}

// dollarTag returns the opening tag ($$ or $name$) of a dollar-quoted string at i, or "" when
// the $ starts something else (a parameter such as $1, or part of an identifier).
func dollarTag(src string, i int) string {
	if i > 0 && isIdentByte(src[i-1]) {
		return ""
	}
	for j := i + 1; j < len(src); j++ {
		c := src[j]
		switch {
		case c == '$':
			return src[i : j+1]
		case c >= '0' && c <= '9' && j == i+1:
			return ""
		case !isIdentByte(c):
			return ""
		}
	}
	return ""
}

func skipDollarQuoted(src string, i int, tag string) int {
	if j := strings.Index(src[i+len(tag):], tag); j >= 0 {
		return i + len(tag) + j + len(tag)
	}
	return len(src)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
