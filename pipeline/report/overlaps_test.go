package report

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// viewOverlapsQuery is the overlaps read before overlapsQuery: keyword_overlap's every pair,
// then the ones with a top domain. The rows must stay the same.
func viewOverlapsQuery(snapshot string, top []string) (string, []any) {
	args := []any{snapshot}
	marks := make([]string, 0, len(top))
	for _, dom := range top {
		args, marks = append(args, dom), append(marks, "?")
	}
	in := strings.Join(marks, ", ")
	args = append(args, args[1:]...)
	return `
		SELECT domain, other_domain, list(DISTINCT lower(trim(keyword)) ORDER BY lower(trim(keyword)))
		FROM keyword_overlap
		WHERE snapshot_month = ? AND domain < other_domain
		  AND (domain IN (` + in + `) OR other_domain IN (` + in + `))
		GROUP BY domain, other_domain
		ORDER BY count(DISTINCT lower(trim(keyword))) DESC, domain, other_domain
		LIMIT 10`, args
}

// overlapPairs adds to the fixture mutual similar sites in several spellings (case, www., a
// trailing dot), a one-way listing, a domain listing itself, and keywords shared in case and
// spaces, in both months.
const overlapPairs = `
	INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain)
	SELECT m, d, p, s FROM (VALUES ('2026-01'), ('2026-02')) months(m), (VALUES
	    ('d.com', 1, 'WWW.E.com.'), ('e.com', 1, 'd.com'), ('d.com', 2, 'f.com'), ('f.com', 1, 'www.d.com'),
	    ('e.com', 2, 'f.com'), ('f.com', 2, 'E.COM'), ('g.com', 1, 'd.com'), ('g.com', 2, 'g.com'),
	    ('a.com', 9, 'd.com'), ('d.com', 9, 'a.com')) v(d, p, s);
	INSERT INTO keywords (snapshot_month, domain, position, keyword)
	SELECT m, d, p, k FROM (VALUES ('2026-01'), ('2026-02')) months(m), (VALUES
	    ('d.com', 1, 'Boots'), ('d.com', 2, 'hats'), ('d.com', 3, 'socks'), ('e.com', 1, ' boots'),
	    ('e.com', 2, 'HATS'), ('f.com', 1, 'socks'), ('f.com', 2, 'boots'), ('g.com', 1, 'boots'),
	    ('a.com', 9, 'hats')) v(d, p, k);`

// TestOverlapsAsTheView: the section's overlaps, read from the top domains' own similar
// sites, are keyword_overlap's rows for them (loadFixture and overlapPairs), for every
// domain, a few, one, and none.
func TestOverlapsAsTheView(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	if _, err := db.ExecContext(context.Background(), overlapPairs); err != nil {
		t.Fatal(err)
	}
	all := []string{"a.com", "b.com", "c.com", "d.com", "e.com", "f.com", "g.com"}
	found := 0
	for _, month := range []string{"2026-01", "2026-02"} {
		for _, top := range [][]string{all, all[:3], {"d.com"}, {"e.com", "g.com"}, {"absent.example"}} {
			want := overlapRows(t, db, viewOverlapsQuery, month, top)
			got := overlapRows(t, db, overlapsQuery, month, top)
			found += len(want)
			t.Logf("%s, top %v: %s", month, top, strings.Join(want, "; "))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, top %v: rows\n%s\nwant the view's\n%s", month, top, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	if found == 0 {
		t.Fatal("the fixture has no keyword overlaps: the test compares nothing")
	}
}

func overlapRows(t *testing.T, db *sql.DB, query func(string, []string) (string, []any), month string, top []string) []string {
	t.Helper()
	q, args := query(month, top)
	var out []string
	err := each(context.Background(), db, q, args, func(r *sql.Rows) error {
		var dom, other string
		var kws []any
		if err := r.Scan(&dom, &other, &kws); err != nil {
			return err
		}
		out = append(out, fmt.Sprint(dom, other, kws))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
