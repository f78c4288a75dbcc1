package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/marcboeker/go-duckdb"
)

// valueStyle says how values are written.
type valueStyle struct {
	grouped  bool // thousands separators in numbers (tables without --raw)
	fullBlob bool // every byte of a BLOB in hex (--raw), not a preview
}

// blobPreview is how many bytes of a BLOB are shown without --raw.
const blobPreview = 16

// textOf renders a non-NULL value as text, as DuckDB would print it: exact decimals, integers
// without exponent, dates, times and timestamps by their column type, intervals, UUIDs, lists,
// structs and maps, and BLOBs as hex.
func textOf(v any, t *colType, st valueStyle) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case []byte:
		return bytesText(x, t, st)
	case time.Time:
		return timeText(x, t)
	case duckdb.Interval:
		return intervalText(x)
	case duckdb.Decimal:
		return group(decimalText(x), st.grouped)
	case *big.Int:
		return group(x.String(), st.grouped)
	case float64:
		if st.grouped {
			x = readable(x)
		}
		return group(floatText(x, 64), st.grouped)
	case float32:
		return group(floatText(float64(x), 32), st.grouped)
	case []any:
		return listText(x, elemType(t), st)
	case map[string]any:
		return structText(x, t, st)
	case duckdb.Map:
		return mapText(x, t, st)
	}
	if s, ok := integerText(v); ok {
		return group(s, st.grouped)
	}
	return fmt.Sprint(v)
}

func integerText(v any) (string, bool) {
	switch x := v.(type) {
	case int8, int16, int32, int64, int:
		return fmt.Sprint(x), true
	case uint8, uint16, uint32, uint64, uint:
		return fmt.Sprint(x), true
	}
	return "", false
}

// floatText writes a float without exponent across the range numbers here take (visits in the
// billions print as 19010718581, not 1.9010718581e+10); only the extremes use one.
func floatText(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if f == 0 {
		return "0" // also for -0, which round() yields for small negative numbers
	}
	if a := math.Abs(f); a < 1e-6 || a >= 1e21 {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	return strconv.FormatFloat(f, 'f', -1, bits)
}

// readableDigits is how many significant digits a DOUBLE shows in a table: the 15 a DOUBLE holds
// for any decimal input. Sums of fractional values carry binary noise beyond them
// (169466275569.21002 for 169466275569.21, 0.30000000000000004 for 0.1 + 0.2); CSV, JSON and
// --raw keep every digit of the shortest exact form.
const readableDigits = 15

// readable is f rounded to readableDigits significant digits.
func readable(f float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', readableDigits, 64), 64)
	if err != nil {
		return f // NaN and the infinities format and parse back; nothing else fails
	}
	return r
}

// decimalText writes a DECIMAL exactly, with all its scale digits ("15.10" for DECIMAL(4,2)).
func decimalText(d duckdb.Decimal) string {
	if d.Value == nil {
		return "0"
	}
	digits := new(big.Int).Abs(d.Value).String()
	sign := ""
	if d.Value.Sign() < 0 {
		sign = "-"
	}
	scale := int(d.Scale)
	if scale == 0 {
		return sign + digits
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
}

// group inserts thousands separators into the integer part of a plain decimal number.
func group(s string, on bool) string {
	if !on {
		return s
	}
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i:]
	}
	if len(intPart) <= 3 || strings.ContainsAny(intPart, "eEaN") { // exponent forms, NaN, Infinity
		return sign + s
	}
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String() + frac
}

func timeText(t time.Time, ct *colType) string {
	t = t.UTC()
	switch typeName(ct) {
	case "DATE":
		return t.Format("2006-01-02")
	case "TIME":
		return t.Format("15:04:05.999999")
	case "TIMESTAMP_S":
		return t.Format("2006-01-02 15:04:05")
	case "TIMESTAMP_MS":
		return t.Format("2006-01-02 15:04:05.999")
	case "TIMESTAMP_NS":
		return t.Format("2006-01-02 15:04:05.999999999")
	case "TIMESTAMPTZ":
		return t.Format("2006-01-02 15:04:05.999999-07")
	}
	return t.Format("2006-01-02 15:04:05.999999")
}

// intervalText writes an interval as DuckDB does: "1 year 2 months 3 days 04:05:06.5".
func intervalText(iv duckdb.Interval) string {
	var parts []string
	plural := func(n int64, unit string) {
		if n == 0 {
			return
		}
		if n == 1 || n == -1 {
			parts = append(parts, fmt.Sprintf("%d %s", n, unit))
		} else {
			parts = append(parts, fmt.Sprintf("%d %ss", n, unit))
		}
	}
	plural(int64(iv.Months/12), "year")
	plural(int64(iv.Months%12), "month")
	plural(int64(iv.Days), "day")
	if iv.Micros != 0 || len(parts) == 0 {
		parts = append(parts, clockText(iv.Micros))
	}
	return strings.Join(parts, " ")
}

func clockText(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	d := time.Duration(micros) * time.Microsecond
	h, m, s, us := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second), micros%1e6
	text := fmt.Sprintf("%s%02d:%02d:%02d", sign, h, m, s)
	if us != 0 {
		text += strings.TrimRight(fmt.Sprintf(".%06d", us), "0")
	}
	return text
}

// bytesText writes a UUID in its canonical form and a BLOB as hex: a short preview with its
// size, or every byte with --raw.
func bytesText(b []byte, t *colType, st valueStyle) string {
	if typeName(t) == "UUID" && len(b) == 16 {
		h := hex.EncodeToString(b)
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	if st.fullBlob || len(b) <= blobPreview {
		return `\x` + hex.EncodeToString(b)
	}
	return fmt.Sprintf(`\x%s… (%s bytes)`, hex.EncodeToString(b[:blobPreview]), group(strconv.Itoa(len(b)), true))
}

// Nested values are written plainly (no separators) so that their own commas stay readable.
func nestedStyle(st valueStyle) valueStyle { return valueStyle{fullBlob: st.fullBlob} }

func listText(xs []any, elem *colType, st valueStyle) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = textOf(x, elem, nestedStyle(st))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func structText(m map[string]any, t *colType, st valueStyle) string {
	parts := make([]string, 0, len(m))
	for _, f := range structFields(m, t) {
		parts = append(parts, "'"+f.name+"': "+textOf(m[f.name], f.typ, nestedStyle(st)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func mapText(m duckdb.Map, t *colType, st valueStyle) string {
	parts := make([]string, 0, len(m))
	for _, e := range mapEntries(m, t, st) {
		parts = append(parts, e.key+"="+textOf(e.value, mapValueType(t), nestedStyle(st)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

type mapEntry struct {
	key   string
	value any
}

// mapEntries returns a MAP's entries sorted by key text: the driver hands MAPs over as Go maps,
// which have no order, and a stable order keeps outputs comparable.
func mapEntries(m duckdb.Map, t *colType, st valueStyle) []mapEntry {
	var keyType *colType
	if t != nil {
		keyType = t.key
	}
	entries := make([]mapEntry, 0, len(m))
	for k, v := range m {
		entries = append(entries, mapEntry{key: textOf(k, keyType, nestedStyle(st)), value: v})
	}
	slices.SortFunc(entries, func(a, b mapEntry) int { return strings.Compare(a.key, b.key) })
	return entries
}

// structFields returns a STRUCT's fields in declaration order (from the column type), or
// sorted by name when the type is unknown.
func structFields(m map[string]any, t *colType) []colField {
	if t != nil && len(t.fields) == len(m) {
		return t.fields
	}
	fields := make([]colField, 0, len(m))
	for k := range m {
		fields = append(fields, colField{name: k})
	}
	slices.SortFunc(fields, func(a, b colField) int { return strings.Compare(a.name, b.name) })
	return fields
}

func typeName(t *colType) string {
	if t == nil {
		return ""
	}
	return t.name
}

func elemType(t *colType) *colType {
	if t == nil {
		return nil
	}
	return t.elem
}

func mapValueType(t *colType) *colType {
	if t == nil {
		return nil
	}
	return t.value
}

// appendJSON appends v as JSON: numbers stay numbers (DECIMAL and HUGEINT exactly, as number
// literals), lists arrays, structs objects in field order, MAPs objects keyed by the key's
// text; dates, times, intervals, UUIDs and BLOBs are strings written as in text output.
func appendJSON(b []byte, v any, t *colType, st valueStyle) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return appendJSONString(b, x)
	case duckdb.Decimal:
		return append(b, decimalText(x)...)
	case *big.Int:
		return append(b, x.String()...)
	case float64, float32:
		return appendJSONFloat(b, x)
	case []any:
		return appendJSONList(b, x, elemType(t), st)
	case map[string]any:
		return appendJSONStruct(b, x, t, st)
	case duckdb.Map:
		return appendJSONMap(b, x, t, st)
	}
	if s, ok := integerText(v); ok {
		return append(b, s...)
	}
	return appendJSONString(b, textOf(v, t, st))
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return append(b, enc...)
}

// appendJSONFloat writes NaN and the infinities, which JSON has no number for, as strings.
func appendJSONFloat(b []byte, v any) []byte {
	f, bits := 0.0, 64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f, bits = float64(x), 32
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendJSONString(b, floatText(f, bits))
	}
	return append(b, floatText(f, bits)...)
}

func appendJSONList(b []byte, xs []any, elem *colType, st valueStyle) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSON(b, x, elem, st)
	}
	return append(b, ']')
}

func appendJSONStruct(b []byte, m map[string]any, t *colType, st valueStyle) []byte {
	b = append(b, '{')
	for i, f := range structFields(m, t) {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSONString(b, f.name)
		b = append(b, ": "...)
		b = appendJSON(b, m[f.name], f.typ, st)
	}
	return append(b, '}')
}

func appendJSONMap(b []byte, m duckdb.Map, t *colType, st valueStyle) []byte {
	b = append(b, '{')
	for i, e := range mapEntries(m, t, st) {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSONString(b, e.key)
		b = append(b, ": "...)
		b = appendJSON(b, e.value, mapValueType(t), st)
	}
	return append(b, '}')
}
