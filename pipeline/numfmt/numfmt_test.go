package numfmt

import (
	"math"
	"strings"
	"testing"
)

// TestFormats pins the number style: one rule per kind of figure, the same on every surface.
func TestFormats(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"billions", Count(19010718581), "19.0B"}, {"1B beside 30.4B", Count(1e9), "1.00B"}, {"30.35B", Count(30.35e9), "30.4B"},
		{"millions", Count(234736386), "235M"}, {"4.56M", Count(4.561e6), "4.56M"}, {"hundreds", Count(950), "950"},
		{"21.5k, never 21 k", Count(21480), "21.5k"}, {"decimals dropped", Count(164.01), "164"},
		{"999.6 rounds to 1.00k", Count(999.6), "1.00k"}, {"thousands", Count(12345), "12.3k"},
		{"999,950 is 1.00M", Count(999950), "1.00M"}, {"9.996k", Count(9996), "10.0k"}, {"zero", Count(0), "0"},
		{"trillions", Count(2.5e12), "2.50T"}, {"beyond trillions", Count(2.5e15), "2,500T"},
		{"visits lost", Count(-1.24e6), "−1.24M"}, {"a fraction lost", Count(-0.2), "0"},

		{"thousands sep", Thousands(1234567), "1,234,567"}, {"negative", Thousands(-1000), "−1,000"},
		{"small", Thousands(12), "12"}, {"min int64", Thousands(math.MinInt64), "−9,223,372,036,854,775,808"},
		{"rank", Rank(314815), "#314,815"}, {"first", Rank(1), "#1"},

		{"share", Share(0.123), "12.3%"}, {"small share", Share(0.0042), "0.4%"}, {"tiny share", Share(0.000031), "<0.1%"},
		{"zero share", Share(0), "0.0%"}, {"whole share", Share(1), "100.0%"}, {"negative share", Share(-0.0001), ">−0.1%"},

		{"rise", Change(0.25), "+25.0%"}, {"fall", Change(-0.5), "−50.0%"}, {"small rise", Change(0.004), "+0.4%"},
		{"2.02% is not +2%", Change(0.0202), "+2.0%"}, {"tiny fall", Change(-0.00049), "0.0%"}, {"tiny rise", Change(0.00049), "0.0%"},
		{"rounds up", Change(-0.00051), "−0.1%"}, {"huge", Change(12.345), "+1,234.5%"}, {"24.4", Change(0.244), "+24.4%"},
		{"to zero", Change(-1), "−100.0%"}, {"32.7, never 32.7 %", Change(-0.327), "−32.7%"},

		{"points up", Points(0.012), "+1.2\u00a0pts"}, {"points down", Points(-0.004), "−0.4\u00a0pts"}, {"no points", Points(0.0004), "0.0\u00a0pts"},

		{"ratio", Ratio(2.5), "2.5×"}, {"small ratio", Ratio(0.0041), "0.0041×"}, {"big ratio", Ratio(37.2), "37×"},
		{"half", Ratio(0.5), "0.5×"}, {"9.96 is 10", Ratio(9.96), "10×"}, {"huge ratio", Ratio(1824396), "1,824,396×"},
		{"zero ratio", Ratio(0), "0×"}, {"one", Ratio(1), "1×"},

		{"plain", Plain(2.5, 2), "2.5"}, {"plain whole", Plain(3, 2), "3"}, {"plain negative", Plain(-1.25, 1), "−1.2"},
		{"trim", TrimZeros("1.50"), "1.5"}, {"trim all", TrimZeros("2.00"), "2"}, {"no point", TrimZeros("100"), "100"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestNoFigureBreaksALine holds that a figure holds no breaking space, so a narrow screen never
// puts its "%" or its unit on a line of its own.
func TestNoFigureBreaksALine(t *testing.T) {
	for _, s := range []string{Count(-12345), Change(-0.327), Share(0.5), Points(0.02), Ratio(1e6), Rank(314815), Plain(1.5, 1)} {
		if strings.ContainsAny(s, " \t\n") {
			t.Errorf("%q holds a breaking space", s)
		}
	}
}

func TestChangeDirectionFollowsThePrintedValue(t *testing.T) {
	for _, tc := range []struct {
		change float64
		want   int
	}{{0.02, 1}, {-0.02, -1}, {0.0004, 0}, {-0.0004, 0}, {0, 0}, {-1, -1}} {
		if got := ChangeDirection(tc.change); got != tc.want {
			t.Errorf("ChangeDirection(%v) = %d, want %d (printed %s)", tc.change, got, tc.want, Change(tc.change))
		}
	}
}
