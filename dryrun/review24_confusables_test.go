package dryrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// TestReview24SummaryConfusables: an argument name with a letter of
// another script shaped like an ASCII one (Cyrillic а in аmount) was shown
// bare and read as the name in ASCII; now it is escaped where it reads as
// ASCII, and a name wholly in another script stays readable.
func TestReview24SummaryConfusables(t *testing.T) {
	for _, p := range [][2]string{
		{`{"аmount":1}`, `{"amount":1}`},
		{`{"rеcipient":1,"title":2}`, `{"recipient":1,"title":2}`},
		{`{"ѕсоре":1}`, `{"scope":1}`},
		{`{"АСМЕъ":1}`, `{"ACMEъ":1}`},
		{`{"admın":1}`, `{"admin":1}`},
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
	for _, tc := range []struct{ args, want string }{
		{`{"адрес":1,"город":2}`, "адрес, город"},
		{`{"аmount":1}`, `"\u0430mount"`},
	} {
		if got := Summary(sOracleTool, json.RawMessage(tc.args)); !strings.HasSuffix(got, ": "+tc.want) {
			t.Errorf("Summary(%s) = %s, want …: %s", tc.args, got, tc.want)
		}
	}
}
