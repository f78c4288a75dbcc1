package sql

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// View is one file of views/*.sql: its path in FS and its text.
type View struct{ Name, Text string }

// requiresPrefix starts a line of a view file naming another file of views/ that must be
// created first ("-- requires: discover_candidates.sql"): a view that selects from a macro
// binds it at creation, so the macro's tables must already exist.
const requiresPrefix = "-- requires:"

// Views returns the non-empty files of views/*.sql in the order they must be created: lexical,
// except that a file comes after every file it requires. The warehouse and the generated BI
// file (bi/parquet_views.sql) both take this order.
func Views() ([]View, error) {
	names, err := fs.Glob(FS, "views/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	byName := map[string]View{}
	var order []string
	for _, name := range names {
		text, err := fs.ReadFile(FS, name)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(string(text)) != "" {
			byName[name] = View{name, string(text)}
			order = append(order, name)
		}
	}
	var out []View
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		v, ok := byName[name]
		if !ok {
			return fmt.Errorf("%s requires %s, which is not a view file", from, name)
		}
		switch state[name] {
		case 1:
			return fmt.Errorf("views require each other in a cycle through %s", name)
		case 2:
			return nil
		}
		state[name] = 1
		for _, dep := range requires(v.Text) {
			if err := visit("views/"+dep, name); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, v)
		return nil
	}
	for _, name := range order {
		if err := visit(name, ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// requires lists the files a view's text requires, from its "-- requires:" lines.
func requires(text string) []string {
	var deps []string
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), requiresPrefix); ok {
			deps = append(deps, strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' })...)
		}
	}
	return deps
}
