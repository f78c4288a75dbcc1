package main

import (
	"reflect"
	"strings"
	"time"
	"unicode"
)

// snakeJSON returns v with every struct turned into a map keyed by its fields' names in
// snake_case (GlobalRank -> global_rank, AIPlatforms -> ai_platforms), so the JSON of types
// shared with other packages reads like the warehouse's columns. Nil pointers become null.
func snakeJSON(v any) any { return snakeValue(reflect.ValueOf(v)) }

func snakeValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if t, ok := v.Interface().(time.Time); ok {
		return t
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return snakeValue(v.Elem())
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = snakeValue(v.Index(i))
		}
		return out
	case reflect.Struct:
		out := make(map[string]any, v.NumField())
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				out[snake(f.Name)] = snakeValue(v.Field(i))
			}
		}
		return out
	}
	return v.Interface()
}

// snake writes a Go field name in snake_case, keeping initialisms together: AIVisits ->
// ai_visits, SharePct -> share_pct, URL -> url.
func snake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || (unicode.IsUpper(r[i-1]) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
