package main

import "strings"

// colType is a DuckDB column type as the driver names it (ColumnTypeDatabaseTypeName):
// "INTEGER", "DECIMAL(18,3)", "VARCHAR[]", "STRUCT(\"a\" INTEGER, \"b\" DATE[])",
// "MAP(VARCHAR, BIGINT)". Rendering needs it because the Go value alone is ambiguous: a DATE,
// a TIME and a TIMESTAMP all arrive as time.Time, a UUID and a BLOB both as []byte.
type colType struct {
	name   string     // the base name, upper case: INTEGER, DECIMAL, LIST, STRUCT, MAP, …
	elem   *colType   // LIST: the element type
	key    *colType   // MAP: the key type
	value  *colType   // MAP: the value type
	fields []colField // STRUCT: the fields in declaration order
}

type colField struct {
	name string
	typ  *colType
}

// column is one result column.
type column struct {
	name string
	typ  *colType
}

// numeric reports whether values of the type are numbers (right-aligned in tables).
func (t *colType) numeric() bool {
	switch t.name {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
		"UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "VARINT":
		return true
	}
	return false
}

// parseType parses a driver type name; an unknown or malformed name yields a type with that
// name and no children, which renders values by their Go type.
func parseType(s string) *colType {
	t, _ := parseTypeAt(strings.TrimSpace(s))
	return t
}

// parseTypeAt parses one type at the start of s and returns it and the rest of s.
func parseTypeAt(s string) (*colType, string) {
	s = strings.TrimLeft(s, " ")
	i := 0
	for i < len(s) && (s[i] == '_' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	t := &colType{name: strings.ToUpper(s[:i])}
	rest := s[i:]
	if strings.HasPrefix(rest, "(") {
		switch t.name {
		case "STRUCT":
			rest = t.parseStructFields(rest[1:])
		case "MAP":
			t.key, rest = parseTypeAt(rest[1:])
			rest = strings.TrimPrefix(strings.TrimLeft(rest, " "), ",")
			t.value, rest = parseTypeAt(rest)
			rest = strings.TrimPrefix(strings.TrimLeft(rest, " "), ")")
		default: // DECIMAL(18,3) and the like: the parameters do not change rendering
			if j := strings.IndexByte(rest, ')'); j >= 0 {
				rest = rest[j+1:]
			}
		}
	}
	for strings.HasPrefix(rest, "[]") {
		t = &colType{name: "LIST", elem: t}
		rest = rest[2:]
	}
	return t, rest
}

// parseStructFields parses `"name" TYPE, "other" TYPE)` (names quoted, quotes doubled).
func (t *colType) parseStructFields(s string) string {
	for {
		s = strings.TrimLeft(s, " ,")
		if s == "" || s[0] == ')' {
			return strings.TrimPrefix(s, ")")
		}
		var name string
		name, s = parseFieldName(s)
		var ft *colType
		ft, s = parseTypeAt(s)
		t.fields = append(t.fields, colField{name: name, typ: ft})
	}
}

func parseFieldName(s string) (name, rest string) {
	if !strings.HasPrefix(s, `"`) {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return s, ""
		}
		return s[:i], s[i:]
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == '"' {
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			return b.String(), s[i+1:]
		}
		b.WriteByte(s[i])
	}
	return b.String(), ""
}
