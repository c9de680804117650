package confirm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// TestReview23bCutKeepsLiterals: a nested value cut where true or false
// ends is cut like text ("true…"), not before the "e" it took for a
// number's exponent ("tru…", "fals…": 79 characters, short of the cut).
func TestReview23bCutKeepsLiterals(t *testing.T) {
	for n := 55; n < 80; n++ {
		x := strings.Repeat("x", n)
		for _, args := range []string{
			`{"v":["` + x + `",true,false,1]}`,
			`{"v":{"` + x + `":false,"b":true}}`,
			`{"v":["` + x + `",1e5,true,-2E-3]}`,
		} {
			if err := checkParsesBack(Describe, args); err != nil {
				t.Errorf("Describe(%s)\n= %v", args, err)
			}
		}
	}
}

// TestReview23bLetterlikeLiterals: the letters of the Letterlike Symbols
// block are mathematical letters too (ℯ is the mathematical script small
// e, whose place in the mathematical block is left empty for it): a
// string spelling a number or literal with them is not shown bare.
func TestReview23bLetterlikeLiterals(t *testing.T) {
	for _, s := range []string{"1ℯ3", "1ⅇ3", "truℯ", "nuℓℓ", "faℓsⅇ", "1ℯ-3", "ºｎ"} {
		args := oracleEncode(map[string]any{"amount": s})
		if err := checkParsesBack(Describe, args); err != nil {
			t.Errorf("Describe(%s)\n= %v", args, err)
		}
		if text := Describe(oracleTool, json.RawMessage(args)); strings.Contains(text, "="+s) {
			t.Errorf("Describe(%s) = %s: shown bare", args, text)
		}
	}
}

// TestReview23bCompatReadsApart: arguments that differ only by a
// compatibility form of ASCII (fullwidth, mathematical, letterlike, or
// another script's digits) do not read the same to a person, in a key, a
// quoted value or a nested value (the fuzz target's second property).
func TestReview23bCompatReadsApart(t *testing.T) {
	for _, p := range [][2]string{
		{`{"a":"１２"}`, `{"a":"12"}`},
		{`{"a":"𝟏𝟐"}`, `{"a":"12"}`},
		{`{"a":"١٢"}`, `{"a":"12"}`},
		{`{"a":"ａ ｂ"}`, `{"a":"a b"}`},
		{`{"a":"ℯ"}`, `{"a":"e"}`},
		{`{"１２":1}`, `{"12":1}`},
		{`{"ａｍｏｕｎｔ":5}`, `{"amount":5}`},
		{`{"ａｍｏｕｎｔ":5,"order":"A1"}`, `{"amount":5,"order":"A1"}`},
		{`{"v":["１２"]}`, `{"v":["12"]}`},
		{`{"v":{"ａｍｏｕｎｔ":5}}`, `{"v":{"amount":5}}`},
		{`"１２"`, `"12"`},
	} {
		for _, a := range p {
			if err := checkParsesBack(Describe, a); err != nil {
				t.Errorf("Describe(%s)\n= %v", a, err)
			}
		}
		ta, tb := Describe(oracleTool, json.RawMessage(p[0])), Describe(oracleTool, json.RawMessage(p[1]))
		if readfold.Fold(ta) == readfold.Fold(tb) {
			t.Errorf("%s and %s both read, to a person,\n%s\n%s", p[0], p[1], ta, tb)
		}
	}
}

// TestReview23bUnreadableCaseFold pins what Describe's doc now says:
// arguments with two member names that differ only in letter case, at
// any depth, read "with unreadable arguments", as ArgsSHA256 refuses them
// (the doc named only a member named twice).
func TestReview23bUnreadableCaseFold(t *testing.T) {
	for _, args := range []string{`{"labels":{"Env":"prod","env":"x"}}`, `{"amount":1,"Amount":2}`} {
		if _, err := ArgsSHA256(json.RawMessage(args)); err == nil {
			t.Errorf("ArgsSHA256(%s) takes it", args)
		}
		if got := Describe(oracleTool, json.RawMessage(args)); got != "Run t with unreadable arguments" {
			t.Errorf("Describe(%s) = %s", args, got)
		}
	}
}
