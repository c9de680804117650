package dryrun

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReview23SummaryNamesReadAsASCII: an argument name with characters
// that read as ASCII letters or digits (fullwidth, mathematical, ℯ) is
// shown escaped, as the consent prompt shows it: bare, ａｍｏｕｎｔ read
// as amount, an argument the tool would not get under that name.
func TestReview23SummaryNamesReadAsASCII(t *testing.T) {
	for _, p := range [][2]string{
		{`{"ａｍｏｕｎｔ":5}`, `{"amount":5}`},
		{`{"𝐚mount":5}`, `{"amount":5}`},
		{`{"titlℯ":"x"}`, `{"title":"x"}`},
		{`{"q１":1}`, `{"q1":1}`},
	} {
		a, b := Summary("t", json.RawMessage(p[0])), Summary("t", json.RawMessage(p[1]))
		if a == b {
			t.Errorf("%s and %s both read %q", p[0], p[1], a)
		}
		if !strings.Contains(a, `\u`) && !strings.Contains(a, `\U`) {
			t.Errorf("%s reads %q: want the look-alike letters escaped", p[0], a)
		}
	}
	// Names in other scripts stay readable.
	if s := Summary("t", json.RawMessage(`{"größe":1,"имя":2}`)); !strings.Contains(s, "größe") || !strings.Contains(s, "имя") {
		t.Errorf("Summary = %q, want größe and имя shown as they are", s)
	}
}
