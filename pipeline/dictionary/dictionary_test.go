package dictionary

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sitewatch/pipeline/warehouse"
)

var update = flag.Bool("update", false, "rewrite docs/data-dictionary.md from the DDL")

const docPath = "../../docs/data-dictionary.md"

func TestMarkdownIsCurrent(t *testing.T) {
	d, err := Default(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(docPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(docPath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read committed dictionary: %v (run go test ./pipeline/dictionary -update)", err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("%s is stale: the DDL comments changed; run `go test ./pipeline/dictionary -update` and commit the result", docPath)
	}
}

// TestEveryObjectDocumented fails when a table, view or column has no comment, so a new column
// cannot land without its meaning, unit and scale.
func TestEveryObjectDocumented(t *testing.T) {
	d, err := Default(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantObjects := []string{
		"ai_platform_history", "ai_platforms", "ai_prompts", "countries", "fetch_errors",
		"geography_share", "keywords", "quality_checks", "raw_responses", "runs", "schema_migrations", "similar_sites",
		"site_tags", "sites", "sources_share", "traffic_history",
		"ai_platform_trend", "channel_mix", "competitors", "keyword_overlap", "latest_sites",
		"top_countries", "traffic_monthly",
		"complete_months", "changes_movers", "changes_competitors", "changes_ai_platforms", "changes_keywords",
		"changes_top_countries", "discover_candidates",
	}
	for _, name := range wantObjects {
		if _, ok := d.Object(name); !ok {
			t.Errorf("dictionary has no object %q", name)
		}
	}
	if len(d.Checks) == 0 {
		t.Error("dictionary documents no quality check")
	}
	for _, c := range d.Checks {
		if strings.TrimSpace(c.Rule) == "" || len(c.Tables) == 0 || c.Severity == "" {
			t.Errorf("quality check %s is not documented: %+v", c.Name, c)
		}
	}
	for _, o := range d.Objects {
		t.Run(o.Name, func(t *testing.T) {
			if o.Comment == "" {
				t.Errorf("%s %s has no COMMENT", o.Kind, o.Name)
			}
			if len(o.Columns) == 0 {
				t.Errorf("%s %s has no columns", o.Kind, o.Name)
			}
			for _, c := range o.Columns {
				if strings.TrimSpace(c.Comment) == "" {
					t.Errorf("column %s.%s (%s) has no COMMENT", o.Name, c.Name, c.Type)
				}
			}
		})
	}
}

// TestCommentsSurviveReopen checks that view comments are recreated with the views when a file
// warehouse is opened and migrated a second time.
func TestCommentsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	for i := 0; i < 2; i++ {
		db, err := sql.Open("duckdb", path)
		if err != nil {
			t.Fatal(err)
		}
		if err := warehouse.Migrate(ctx, db); err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		d, err := Build(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		for _, name := range []string{"sites", "traffic_monthly"} {
			o, ok := d.Object(name)
			if !ok || o.Comment == "" || o.Columns[0].Comment == "" {
				t.Errorf("open %d: %s lost its comments: %+v", i, name, o)
			}
		}
	}
}

func TestWriteText(t *testing.T) {
	d := &Dictionary{Objects: []Object{{
		Name: "t", Kind: KindTable, Comment: "A table.",
		Columns: []Column{
			{Name: "a", Type: "VARCHAR", Comment: "first"},
			{Name: "long_name", Type: "DOUBLE", Comment: "decimal share 0-1"},
		},
	}}}
	var buf bytes.Buffer
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "TABLE t\n  A table.\n  a          VARCHAR  first\n  long_name  DOUBLE   decimal share 0-1\n"
	if got := buf.String(); got != want {
		t.Errorf("WriteText:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteMarkdownEscapesPipes(t *testing.T) {
	d := &Dictionary{Objects: []Object{{
		Name: "v", Kind: KindView, Comment: "x",
		Columns: []Column{{Name: "c", Type: "VARCHAR", Nullable: true, Comment: "a | b"}},
	}}}
	var buf bytes.Buffer
	if err := d.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	if want := "| `c` | VARCHAR | yes | a \\| b |\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, buf.String())
	}
}
