package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestBoldFontMeasured: the headings are measured in the bold face, which is wider than the
// regular one (a wrong weight would silently fall back to another face).
func TestBoldFontMeasured(t *testing.T) {
	face := fonts.Lookup(boldFont, vg.Length(13))
	bold := float64(face.Width("Pages / visit"))
	regular := textWidth("Pages / visit", 13)
	if bold <= regular*1.02 {
		t.Errorf("bold heading %.1f px, regular %.1f px: the bold face is not the one measured", bold, regular)
	}
}

// TestAllColumns: each column is as wide as its widest cell or heading (titles capped), so no
// cell of the All domains grid is clipped.
func TestAllColumns(t *testing.T) {
	rows := []allRow{{Domain: "hotel-booking-comparison-site.com", Title: strings.Repeat("A long title ", 10), Category: "x", Visits: "1.00B",
		MoM: "+1,234.5%", YoY: "from Feb 2027", Rank: "#1,496,235", RankChange: "▲ 1,234", AIVisits: "—", Bounce: "—", Pages: "—", Duration: "—", Source: "analytics"}}
	wide, phone := allColumns(rows)
	cols, onPhone := strings.Fields(string(wide)), strings.Fields(string(phone))
	if len(cols) != len(allHeads) || len(onPhone) != len(allHeads) || len(phoneOrder) != len(allHeads) {
		t.Fatalf("%d columns, %d on a phone, phoneOrder %d, want %d", len(cols), len(onPhone), len(phoneOrder), len(allHeads))
	}
	for i, c := range phoneOrder {
		if onPhone[i] != cols[c] {
			t.Errorf("phone column %d (%s) is %s, want %s", i, allHeads[c], onPhone[i], cols[c])
		}
	}
	want := map[int]string{0: px(textWidth(rows[0].Domain, 13) + cellExtra), 1: px(maxTextCol + cellExtra), 5: px(textWidth("from Feb 2027", 13) + cellExtra)}
	for i, w := range want {
		if cols[i] != w {
			t.Errorf("column %s is %s, want %s", allHeads[i], cols[i], w)
		}
	}
}

func px(w float64) string { return fmt.Sprintf("%.0fpx", math.Ceil(w)) }
