package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "github.com/marcboeker/go-duckdb"
)

func memDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// render runs one statement on an in-memory DuckDB and returns its output in format.
func render(t *testing.T, db *sql.DB, format string, raw bool, query string) string {
	t.Helper()
	var b bytes.Buffer
	out, err := newFormatter(format, &b, raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := runQuery(context.Background(), db, query, out); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return b.String()
}

// TestRenderEveryType: each DuckDB type reads as DuckDB prints it, in table, CSV and JSON.
func TestRenderEveryType(t *testing.T) {
	db := memDB(t)
	tests := []struct {
		name, expr, table, csv, json string
	}{
		{"Decimal", "15.10::DECIMAL(4,2)", "15.10", "15.10", "15.10"},
		{"DecimalNegativeSmall", "-0.05::DECIMAL(5,3)", "-0.050", "-0.050", "-0.050"},
		{"DecimalLarge", "1234567.891::DECIMAL(18,3)", "1,234,567.891", "1234567.891", "1234567.891"},
		{"BigInt", "19010718581::BIGINT", "19,010,718,581", "19010718581", "19010718581"},
		{"DoubleVisits", "round(19010718581.4)", "19,010,718,581", "19010718581", "19010718581"},
		{"DoubleFraction", "234736386.25::DOUBLE", "234,736,386.25", "234736386.25", "234736386.25"},
		{"DoubleTiny", "1e-9::DOUBLE", "1e-09", "1e-09", "1e-09"},
		{"DoubleNoise", "0.1::DOUBLE + 0.2::DOUBLE", "0.3", "0.30000000000000004", "0.30000000000000004"},
		{"DoubleSumNoise", "169466275569.21002::DOUBLE", "169,466,275,569.21", "169466275569.21002", "169466275569.21002"},
		{"DoubleShare", "0.123456789012::DOUBLE", "0.123456789012", "0.123456789012", "0.123456789012"},
		{"DoubleNaN", "'nan'::DOUBLE", "NaN", "NaN", `"NaN"`},
		{"Float", "1.5::FLOAT", "1.5", "1.5", "1.5"},
		{"HugeInt", "170141183460469231731687303715884105727::HUGEINT", "170,141,183,460,469,231,731,687,303,715,884,105,727", "170141183460469231731687303715884105727", "170141183460469231731687303715884105727"},
		{"NegativeInt", "-1234::INTEGER", "-1,234", "-1234", "-1234"},
		{"UBigInt", "18446744073709551615::UBIGINT", "18,446,744,073,709,551,615", "18446744073709551615", "18446744073709551615"},
		{"Bool", "true", "true", "true", "true"},
		{"Varchar", "'bbc.co.uk'", "bbc.co.uk", "bbc.co.uk", `"bbc.co.uk"`},
		{"Date", "DATE '2026-11-01'", "2026-11-01", "2026-11-01", `"2026-11-01"`},
		{"MidnightTimestamp", "TIMESTAMP '2026-11-01 00:00:00'", "2026-11-01 00:00:00", "2026-11-01 00:00:00", `"2026-11-01 00:00:00"`},
		{"Timestamp", "TIMESTAMP '2026-11-01 06:30:15.25'", "2026-11-01 06:30:15.25", "2026-11-01 06:30:15.25", `"2026-11-01 06:30:15.25"`},
		{"TimestampTZ", "TIMESTAMPTZ '2026-11-01 06:30:00+00'", "2026-11-01 06:30:00+00", "2026-11-01 06:30:00+00", `"2026-11-01 06:30:00+00"`},
		{"Time", "TIME '06:30:00'", "06:30:00", "06:30:00", `"06:30:00"`},
		{"Interval", "INTERVAL 14 MONTH + INTERVAL 3 DAY + INTERVAL 4 HOUR", "1 year 2 months 3 days 04:00:00", "1 year 2 months 3 days 04:00:00", `"1 year 2 months 3 days 04:00:00"`},
		{"IntervalMonths", "INTERVAL 3 MONTH", "3 months", "3 months", `"3 months"`},
		{"IntervalZero", "INTERVAL 0 DAY", "00:00:00", "00:00:00", `"00:00:00"`},
		{"UUID", "'6f1c7c1e-8f2a-4c5b-9d3e-2a1b0c9d8e7f'::UUID", "6f1c7c1e-8f2a-4c5b-9d3e-2a1b0c9d8e7f", "6f1c7c1e-8f2a-4c5b-9d3e-2a1b0c9d8e7f", `"6f1c7c1e-8f2a-4c5b-9d3e-2a1b0c9d8e7f"`},
		{"BlobShort", `'\x28\xB5\x2F\xFD'::BLOB`, `\x28b52ffd`, `\x28b52ffd`, `"\\x28b52ffd"`},
		{"BlobLong", "repeat('\\x28\\xB5'::BLOB, 600)", `\x28b528b528b528b528b528b528b528b5… (1,200 bytes)`, `\x28b528b528b528b528b528b528b528b5… (1,200 bytes)`, `"\\x28b528b528b528b528b528b528b528b5… (1,200 bytes)"`},
		{"List", "[1, 2, 3]", "[1, 2, 3]", "[1, 2, 3]", "[1, 2, 3]"},
		{"ListOfDates", "[DATE '2026-01-01', DATE '2026-02-01']", "[2026-01-01, 2026-02-01]", "[2026-01-01, 2026-02-01]", `["2026-01-01", "2026-02-01"]`},
		{"ListOfTimestamps", "[TIMESTAMP '2026-01-01 00:00:00']", "[2026-01-01 00:00:00]", "[2026-01-01 00:00:00]", `["2026-01-01 00:00:00"]`},
		{"Struct", "{'month': DATE '2026-11-01', 'visits': 1234567::BIGINT, 'share': 0.25::DECIMAL(3,2)}", "{'month': 2026-11-01, 'visits': 1234567, 'share': 0.25}", "{'month': 2026-11-01, 'visits': 1234567, 'share': 0.25}", `{"month": "2026-11-01", "visits": 1234567, "share": 0.25}`},
		{"Map", "MAP {'us': 0.5::DECIMAL(3,2), 'de': 0.25::DECIMAL(3,2)}", "{de=0.25, us=0.50}", "{de=0.25, us=0.50}", `{"de": 0.25, "us": 0.50}`},
		{"MapOfLists", "MAP {'a': [TIMESTAMP '2026-01-01 00:00:00']}", "{a=[2026-01-01 00:00:00]}", "{a=[2026-01-01 00:00:00]}", `{"a": ["2026-01-01 00:00:00"]}`},
		{"ListOfStructs", "[{'k': 'x', 'n': 1}]", "[{'k': x, 'n': 1}]", "[{'k': x, 'n': 1}]", `[{"k": "x", "n": 1}]`},
		{"Enum", "'b'::ENUM('a', 'b')", "b", "b", `"b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := "SELECT " + tc.expr + " AS v"
			if got := strings.Split(render(t, db, "table", false, q), "\n")[2]; strings.TrimSpace(got) != tc.table {
				t.Errorf("table: got %q, want %q", strings.TrimSpace(got), tc.table)
			}
			if got := strings.Split(render(t, db, "csv", false, q), "\n")[1]; strings.Trim(got, `"`) != tc.csv {
				t.Errorf("csv: got %q, want %q", got, tc.csv)
			}
			js := render(t, db, "json", false, q)
			var decoded []map[string]any
			if err := json.Unmarshal([]byte(js), &decoded); err != nil {
				t.Fatalf("json output does not parse: %v\n%s", err, js)
			}
			if want := `{"v": ` + tc.json + `}`; !strings.Contains(js, want) {
				t.Errorf("json: got %s, want it to hold %s", js, want)
			}
		})
	}
}

func TestRenderNulls(t *testing.T) {
	db := memDB(t)
	q := "SELECT NULL::INTEGER AS n, NULL::VARCHAR AS s, [1, NULL] AS l, {'a': NULL::INTEGER} AS st"
	if got := render(t, db, "table", false, q); !strings.Contains(got, "NULL  NULL  [1, NULL]  {'a': NULL}") {
		t.Errorf("table:\n%s", got)
	}
	if got := render(t, db, "csv", false, q); !strings.Contains(got, "\n,,\"[1, NULL]\",{'a': NULL}\n") {
		t.Errorf("csv (NULL is an empty field):\n%s", got)
	}
	if got := render(t, db, "json", false, q); !strings.Contains(got, `{"n": null, "s": null, "l": [1, null], "st": {"a": null}}`) {
		t.Errorf("json:\n%s", got)
	}
}

// TestTableAlignmentAndRaw: numbers right-aligned with separators by default; --raw prints
// plain values, whole blobs, uncut cells.
func TestTableAlignmentAndRaw(t *testing.T) {
	db := memDB(t)
	q := "SELECT * FROM (VALUES ('google.com', 98765432101::BIGINT), ('a.io', 7::BIGINT)) t(domain, visits) ORDER BY visits DESC"
	got := render(t, db, "table", false, q)
	lines := strings.Split(got, "\n")
	if lines[0] != "domain              visits" || lines[2] != "google.com  98,765,432,101" || lines[3] != "a.io                     7" || lines[4] != "(2 rows)" {
		t.Errorf("table:\n%s", got)
	}
	raw := render(t, db, "table", true, q)
	if !strings.Contains(raw, "google.com  98765432101") {
		t.Errorf("raw table:\n%s", raw)
	}
	long := render(t, db, "table", false, "SELECT repeat('x', 200) AS s, repeat('\\x01'::BLOB, 40) AS b")
	if strings.Contains(long, strings.Repeat("x", 81)) || !strings.Contains(long, "…") {
		t.Errorf("a long cell is not cut in a table:\n%s", long)
	}
	full := render(t, db, "csv", true, "SELECT repeat('\\x01'::BLOB, 40) AS b")
	if !strings.Contains(full, `\x`+strings.Repeat("01", 40)+"\n") {
		t.Errorf("--raw csv does not hold the whole blob:\n%s", full)
	}
	dec := render(t, db, "table", false, "SELECT * FROM (VALUES (5.0::DOUBLE), (22.25), (-0.0), (NULL)) t(pct)")
	if want := "  pct\n-----\n 5.00\n22.25\n 0.00\n NULL\n(4 rows)\n"; dec != want {
		t.Errorf("float column:\n%s\nwant:\n%s", dec, want)
	}
	if got := render(t, db, "table", false, "SELECT 1 AS n"); !strings.HasSuffix(got, "(1 row)\n") {
		t.Errorf("one row:\n%s", got)
	}
	if got := render(t, db, "json", false, "SELECT 1 AS n WHERE false"); got != "[]\n" {
		t.Errorf("empty json result = %q", got)
	}
}

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"Two", "select 1; select 2", []string{"select 1", "select 2"}},
		{"SemicolonInString", "select 'a;b'; select 2;", []string{"select 'a;b'", "select 2"}},
		{"DoubledQuote", "select 'it''s;'; select 2", []string{"select 'it''s;'", "select 2"}},
		{"EscapeString", `select E'\';'; select 2`, []string{`select E'\';'`, "select 2"}},
		{"QuotedIdentifier", `select 1 as "a;b"; select 2`, []string{`select 1 as "a;b"`, "select 2"}},
		{"LineComment", "select 1; -- a; comment\nselect 2", []string{"select 1", "-- a; comment\nselect 2"}},
		{"BlockComment", "select /* ; /* nested; */ ; */ 1; select 2", []string{"select /* ; /* nested; */ ; */ 1", "select 2"}},
		{"DollarQuote", "select $$a;b$$; select $tag$x;$$;$tag$; select 3", []string{"select $$a;b$$", "select $tag$x;$$;$tag$", "select 3"}},
		{"Parameter", "select $1; select 2", []string{"select $1", "select 2"}},
		{"OnlyComments", "-- nothing\n/* here */ ;  ; ", nil},
		{"TrailingComment", "select 1;\n-- done\n", []string{"select 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range splitStatements(tc.in) {
				got = append(got, s.text)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("split(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if st := splitStatements("select 1;\n\n  -- two\n  select 2"); len(st) != 2 || st[1].line != 4 {
		t.Errorf("lines: %+v, want the second statement on line 4 (its comment does not count)", st)
	}
}

// TestRunStatementsEachResult: every statement's result is printed, a ';' in a string does
// not split, and a failing statement is named by number and line.
func TestRunStatementsEachResult(t *testing.T) {
	db := memDB(t)
	var b bytes.Buffer
	newOut := func() formatter { f, _ := newFormatter("csv", &b, false); return f }
	err := runStatements(context.Background(), db, splitStatements("select 1 as a; select 'x;y' as b"), "test", newOut, &b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "a\n1\n\nb\nx;y\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	b.Reset()
	err = runStatements(context.Background(), db, splitStatements("select 1;\nselect nope"), "q.sql", newOut, &b)
	if err == nil || !strings.Contains(err.Error(), "statement 2 of 2 (q.sql line 2)") {
		t.Errorf("err = %v, want it to name statement 2 on line 2", err)
	}
	if !strings.HasPrefix(b.String(), "a\n1\n") && !strings.HasPrefix(b.String(), "1\n1\n") {
		t.Errorf("the first result was not printed before the failure: %q", b.String())
	}
}

func TestParseType(t *testing.T) {
	ty := parseType(`STRUCT("a ""b""" INTEGER, c MAP(VARCHAR, DATE[]), d DECIMAL(18,3))[]`)
	if ty.name != "LIST" || ty.elem.name != "STRUCT" || len(ty.elem.fields) != 3 {
		t.Fatalf("parsed %+v", ty)
	}
	f := ty.elem.fields
	if f[0].name != `a "b"` || f[0].typ.name != "INTEGER" || f[1].typ.name != "MAP" || f[1].typ.value.name != "LIST" ||
		f[1].typ.value.elem.name != "DATE" || f[2].typ.name != "DECIMAL" {
		t.Errorf("fields %+v %+v %+v", f[0], f[1].typ, f[2])
	}
}
