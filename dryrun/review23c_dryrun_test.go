package dryrun

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// TestReview23cLigaturesReadApart: an argument name written with a Latin
// ligature or digraph (ﬁ, ﬀ, ﬂ, ĳ, ǳ), one character whose compatibility
// form is ASCII letters, is escaped as the fullwidth ones are: bare,
// proﬁle read as profile, a name the tool declares, beside the one sent.
func TestReview23cLigaturesReadApart(t *testing.T) {
	for _, p := range [][2]string{
		{`{"proﬁle":1,"title":2}`, `{"profile":1,"title":2}`},
		{`{"oﬀset":1}`, `{"offset":1}`},
		{`{"ﬂag":1}`, `{"flag":1}`},
		{`{"ĳ ǳ":1}`, `{"ij dz":1}`},
		{`{"ﬅop":1}`, `{"stop":1}`},
		{`{"𝐚mount":1}`, `{"amount":1}`},
		{`{"ℯ٣":1}`, `{"e3":1}`},
	} {
		a, b := Summary(sOracleTool, json.RawMessage(p[0])), Summary(sOracleTool, json.RawMessage(p[1]))
		if readfold.Read(a) == readfold.Read(b) {
			t.Errorf("%s and %s both read %s", p[0], p[1], readfold.Read(a))
		}
		if err := checkSummary(Summary, p[0]); err != nil {
			t.Errorf("Summary(%s)\n= %v", p[0], err)
		}
	}
}
