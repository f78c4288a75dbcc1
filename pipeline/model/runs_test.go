package model

import "testing"

func TestCreditsBySourceJSON(t *testing.T) {
	if got := CreditsBySourceJSON(nil); got != "" {
		t.Errorf("no sources: %q, want \"\" (NULL)", got)
	}
	if got, want := CreditsBySourceJSON([]SourceCredits{{Name: `a"b`, Credits: 3}}), `{"a\"b":3}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
