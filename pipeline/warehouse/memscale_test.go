package warehouse

import "testing"

func TestScaleLimit(t *testing.T) {
	for _, c := range []struct {
		limit   string
		domains int64
		want    string
	}{
		{"256MB", 0, "256MB"},
		{"256MB", 100_000, "256MB"},
		{"256MB", 100_001, "257MB"},
		{"256MB", 150_000, "384MB"},
		{"256MB", 1_000_000, "2560MB"},
		{"128MB", 1_000_000, "1280MB"},
		{"1GB", 1_000_000, "1GB"},
		{"xMB", 1_000_000, "xMB"},
	} {
		if got := scaleLimit(c.limit, c.domains); got != c.want {
			t.Errorf("scaleLimit(%q, %d) = %q, want %q", c.limit, c.domains, got, c.want)
		}
	}
}
