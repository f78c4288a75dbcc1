package report

import "testing"

func TestProse(t *testing.T) {
	for in, want := range map[string]string{
		"run `sitewatch rebuild --all` once":           "run <code>sitewatch rebuild --all</code> once",
		"fell 35.0 % — its months usually move ±5.5 %": "fell 35.0\u00a0% — its months usually move ±5.5\u00a0%",
		"<b>x</b> & `a<b`":                             "&lt;b&gt;x&lt;/b&gt; &amp; <code>a&lt;b</code>",
		"a lone ` backtick":                            "a lone  backtick",
		"21 k visits, 1,240 visits":                    "21\u00a0k visits, 1,240\u00a0visits",
	} {
		if got := string(prose(in)); got != want {
			t.Errorf("prose(%q) = %q, want %q", in, got, want)
		}
	}
}
