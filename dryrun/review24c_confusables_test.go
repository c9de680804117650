package dryrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// TestReview24cSummaryWholeScriptTwins: a name wholly in one other script
// that another script with lookalikes spells alike, letter for letter, was
// shown bare (Cyrillic ПАР, Greek ΠΑΡ), so two names read alike.
func TestReview24cSummaryWholeScriptTwins(t *testing.T) {
	twins := strings.NewReplacer("П", "Π", "Ф", "Φ", "к", "κ", "А", "Α", "Р", "Ρ", "а", "α")
	read := func(s string) string { return twins.Replace(readfold.Read(s)) }
	for _, p := range [][2]string{
		{`{"ПАР":1}`, `{"ΠΑΡ":1}`},
		{`{"ПФ":1}`, `{"ΠΦ":1}`},
		{`{"как":1}`, `{"κακ":1}`},
	} {
		for _, a := range p {
			if err := checkSummary(Summary, a); err != nil {
				t.Errorf("Summary(%s)\n= %v", a, err)
			}
		}
		ta, tb := Summary(sOracleTool, json.RawMessage(p[0])), Summary(sOracleTool, json.RawMessage(p[1]))
		if read(ta) == read(tb) {
			t.Errorf("%s and %s both read, to a person, %s", p[0], p[1], read(ta))
		}
	}
	if got, want := Summary(sOracleTool, json.RawMessage(`{"адрес":1}`)), "arguments: адрес"; !strings.HasSuffix(got, want) {
		t.Errorf("Summary = %s, want it to end in %s", got, want)
	}
}
