package confirm

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// Letters of other scripts shaped like ASCII ones (Unicode's
// confusables.txt: Cyrillic А, Greek ο, Armenian օ, Cherokee Ꭺ, Latin ı)
// were shown bare, so that arguments read as other arguments:
// recipient=Аcme (Cyrillic А) as recipient=Acme.

// review24Spoofs are arguments that read, letter for letter, as the
// ASCII ones beside them.
var review24Spoofs = [][2]string{
	{`{"recipient":"Аcme"}`, `{"recipient":"Acme"}`},             // Cyrillic А
	{`{"recipient":"АСМЕ"}`, `{"recipient":"ACME"}`},             // a word of lookalikes only
	{`{"recipient":"АСМЕъ"}`, `{"recipient":"ACMEъ"}`},           // Cyrillic, and ASCII beside a Cyrillic letter
	{`{"аmount":1}`, `{"amount":1}`},                             // a key
	{`{"role":"αdmin"}`, `{"role":"admin"}`},                     // Greek α
	{`{"role":"admın"}`, `{"role":"admin"}`},                     // Latin dotless ı
	{`{"host":"gօօgle.com"}`, `{"host":"google.com"}`},           // Armenian օ
	{`{"org":"ᎪᏟᎷᎬ"}`, `{"org":"ACME"}`},                         // Cherokee
	{`{"to":"ꓮꓚꓟꓰ"}`, `{"to":"ACME"}`},                           // Lisu
	{`{"v":{"recipient":"Аcme"}}`, `{"v":{"recipient":"Acme"}}`}, // nested
	{`{"v":["Аcme",1]}`, `{"v":["Acme",1]}`},                     // in an array
	{`{"recipient":"сοк"}`, `{"recipient":"сок"}`},               // Greek ο in a Cyrillic word
	{`{"note":"pay Аcme now"}`, `{"note":"pay Acme now"}`},       // in a sentence
	{`{"amount":"З"}`, `{"amount":"3"}`},                         // Cyrillic Ze, shaped like 3
	{`{"amount":"б"}`, `{"amount":"6"}`},                         // Cyrillic be, shaped like 6
	{`{"р":1,"p":2}`, `{"p":1,"р":2}`},                           // two keys that read alike
	{`{"id":"ТОКЕN-1"}`, `{"id":"TOKEN-1"}`},                     // Cyrillic capitals, ASCII N
}

// TestReview24DescribeConfusables: arguments that differ in a letter of
// another script shaped like an ASCII one do not read alike in the
// consent prompt, and the oracle reads each as sent.
func TestReview24DescribeConfusables(t *testing.T) {
	for _, p := range review24Spoofs {
		for _, a := range p {
			if !oracleInDomain(a) {
				t.Fatalf("%s: not in the guard's domain", a)
			}
			if err := checkParsesBack(Describe, a); err != nil {
				t.Errorf("Describe(%s)\n= %v", a, err)
			}
		}
		ta, tb := Describe(oracleTool, json.RawMessage(p[0])), Describe(oracleTool, json.RawMessage(p[1]))
		if readfold.Read(ta) == readfold.Read(tb) {
			t.Errorf("%s and %s both read, to a person, %s\n%s\n%s", p[0], p[1], readfold.Read(ta), ta, tb)
		}
	}
}

// TestReview24DescribeOtherScriptsReadable: a word wholly in another
// script, with a letter not shaped like ASCII, is shown as it is.
func TestReview24DescribeOtherScriptsReadable(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"city":"Москва"}`, `city=Москва`},
		{`{"note":"доставка завтра"}`, `note="доставка завтра"`},
		{`{"note":"Привет"}`, `note=Привет`},
		{`{"note":"Ура"}`, `note="\u0423\u0440\u0430"`}, // wholly of lookalikes: УРА reads YPA
		{`{"note":"λόγος"}`, `note=λόγος`},
		{`{"адрес":"Шереметьево"}`, `адрес=Шереметьево`},
		{`{"v":{"город":"Москва"}}`, `v={"город":"Москва"}`},
		{`{"note":"東京タワ"}`, `note=東京タワ`},
		{`{"note":"Tシャツ"}`, `note=Tシャツ`},
		{`{"note":"сор"}`, `note="\u0441\u043e\u0440"`}, // reads cop
	} {
		got := Describe(oracleTool, json.RawMessage(tc.args))
		if !strings.HasSuffix(got, " with "+tc.want) {
			t.Errorf("Describe(%s)\n= %s\nwant … with %s", tc.args, got, tc.want)
		}
	}
}

// review24Nasty adds letters of other scripts to the oracle's strings:
// lookalikes (Cyrillic, Greek, Armenian, Cherokee, Latin ı), letters that
// look like no ASCII one (ж, ъ, λ), and the ASCII they look like.
var review24Nasty = append(slices24(oracleNasty),
	"А", "а", "с", "о", "р", "е", "З", "б", "ж", "ъ", "к", "Ο", "ο", "α", "λ", "օ", "Ꭺ", "ı",
	"A", "c", "o", "p", "e", "3", "6", "O", "Москва", "сок", "coк", "Аcme", "Acme",
)

func slices24(s []string) []string { return append([]string(nil), s...) }

func review24RandString(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(4)
	if r.IntN(8) == 0 {
		n = 20 + r.IntN(80)
	}
	for range n {
		s := review24Nasty[r.IntN(len(review24Nasty))]
		if r.IntN(3) == 0 {
			s = string(rune('a' + r.IntN(26)))
		}
		b.WriteString(s)
	}
	return b.String()
}

// TestReview24DescribeOracleProperty is the property test of
// review23_oracle_test.go with letters of other scripts among its
// strings: every text parses back, and no two read alike to a person.
func TestReview24DescribeOracleProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2026))
	seen := map[string]string{}
	fails := 0
	for i := 0; i < 3000 && fails < 10; i++ {
		m := map[string]any{}
		for range r.IntN(4) {
			var v any = review24RandString(r)
			switch r.IntN(4) {
			case 0:
				v = map[string]any{review24RandString(r): review24RandString(r)}
			case 1:
				v = json.Number("1")
			}
			m[review24RandString(r)] = v
		}
		args := oracleEncode(m)
		if !oracleInDomain(args) {
			continue
		}
		if err := checkParsesBack(Describe, args); err != nil {
			fails++
			t.Errorf("Describe(%s)\n= %v", args, err)
			continue
		}
		text := Describe(oracleTool, json.RawMessage(args))
		if strings.Contains(text, ellipsis) || strings.Contains(text, "≈") {
			continue
		}
		c, _ := canonical(json.RawMessage(args))
		h := readfold.Read(text)
		if prev, ok := seen[h]; ok && prev != string(c) {
			fails++
			t.Errorf("%s and %s both read, to a person,\n%s", prev, c, h)
		}
		seen[h] = string(c)
	}
}
