package confirm

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// TestReview23cLigaturesReadApart: a key or string written with a Latin
// ligature or digraph (ﬁ, ﬀ, ﬂ, ĳ, ǳ), one character whose compatibility
// form is ASCII letters, reads as those letters: {"proﬁle":"admin"} read
// profile=admin, an argument the tool does not get, and mode=ﬁle read as
// mode=file.
func TestReview23cLigaturesReadApart(t *testing.T) {
	for _, p := range [][2]string{
		{`{"proﬁle":"admin"}`, `{"profile":"admin"}`},
		{`{"oﬀset":0,"limit":10}`, `{"offset":0,"limit":10}`},
		{`{"mode":"ﬁle"}`, `{"mode":"file"}`},
		{`{"ﬂag":true}`, `{"flag":true}`},
		{`{"a":"ĳ ǳ ǉ ǌ"}`, `{"a":"ij dz lj nj"}`},
		{`{"a":"ﬅop"}`, `{"a":"stop"}`},
		{`{"v":{"proﬁle":"admin"}}`, `{"v":{"profile":"admin"}}`},
		{`{"v":["ﬁle"]}`, `{"v":["file"]}`},
	} {
		a, b := Describe(oracleTool, json.RawMessage(p[0])), Describe(oracleTool, json.RawMessage(p[1]))
		if readfold.Read(a) == readfold.Read(b) {
			t.Errorf("%s and %s both read %s", p[0], p[1], readfold.Read(a))
		}
		if err := checkParsesBack(Describe, p[0]); err != nil {
			t.Errorf("Describe(%s)\n= %v", p[0], err)
		}
	}
}
