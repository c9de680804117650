package dryrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// TestReview24bSummaryShapedLetters: a name wholly in one other script
// whose only letter not in the table of lookalikes is shaped like ASCII
// (ꚙ as oo, ё as ë) was shown bare, and one cut to maxNameRunes was
// judged by the word rule before the cut: a word of lookalikes whose
// letter of its own script stood past the cut was shown bare.
func TestReview24bSummaryShapedLetters(t *testing.T) {
	for _, p := range [][2]string{
		{`{"ѕсһꚙӏ":1}`, `{"school":1}`},
		{`{"docsノx":1}`, `{"docs/x":1}`},
	} {
		for _, a := range p {
			if err := checkSummary(Summary, a); err != nil {
				t.Errorf("Summary(%s)\n= %v", a, err)
			}
		}
		ta, tb := Summary(sOracleTool, json.RawMessage(p[0])), Summary(sOracleTool, json.RawMessage(p[1]))
		if readfold.Read(ta) == readfold.Read(tb) {
			t.Errorf("%s and %s both read, to a person, %s", p[0], p[1], readfold.Read(ta))
		}
	}
	name := strings.Repeat("АВЕКМНОРСТХ", 7) + "ж" // ж past the cut
	if got := Summary(sOracleTool, json.RawMessage(`{"`+name+`":1}`)); strings.Contains(got, "АВЕ") {
		t.Errorf("Summary = %s: lookalikes shown bare", got)
	}
}
