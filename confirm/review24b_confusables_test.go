package confirm

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// Second round on the look-alike escaping of review24: a word wholly in
// one other script was shown bare when it held a letter of that script
// outside the table of lookalikes, though confusables.txt gives that
// letter as ASCII with a mark (Cyrillic ё, ë), as two ASCII letters (ꚙ,
// oo) or as ASCII punctuation (Coptic Ⲻ, -; Cherokee Ꭾ, ?); and Katakana
// ノ (a slash) was shown bare as a letter.

// review24bSpoofs are arguments that read, letter for letter, as the
// arguments beside them.
var review24bSpoofs = [][2]string{
	{`{"to":"Сһӏоё"}`, `{"to":"Chloë"}`},             // Cyrillic, ё as ë
	{`{"to":"ѕсһꚙӏ"}`, `{"to":"school"}`},            // Cyrillic ꚙ as oo
	{`{"ѕсһꚙӏ":1}`, `{"school":1}`},                  // a key
	{`{"id":"ⲞⲔⲺⲦⲞ"}`, `{"id":"OK-TO"}`},             // Coptic Ⲻ as -
	{`{"note":"pay ᎪᏟᎷᎬᎮ"}`, `{"note":"pay ACME?"}`}, // Cherokee Ꭾ as ?
	{`{"path":"docsノx"}`, `{"path":"docs/x"}`},       // Katakana ノ as /
	{`{"v":{"to":"Сһӏоё"}}`, `{"v":{"to":"Chloë"}}`}, // nested
	{`{"to":"Νό"}`, `{"to":"Nó"}`},                   // Greek ό as ó
	{`{"note":"Ꭺ ТАЫЕ"}`, `{"note":"Ꭺ TAblE"}`},      // Ы as bl
}

// TestReview24bDescribeShapedLetters: such arguments do not read alike in
// the consent prompt, and the oracle reads each as sent.
func TestReview24bDescribeShapedLetters(t *testing.T) {
	for _, p := range review24bSpoofs {
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
	for _, tc := range []struct{ args, want string }{
		{`{"city":"Москва"}`, `city=Москва`},
		{`{"note":"ёлка"}`, `note=ёлка`},
		{`{"note":"λόγος"}`, `note=λόγος`},
		{`{"to":"Сһӏоё"}`, `to="\u0421\u04bb\u04cf\u043e\u0451"`},
	} {
		if got := Describe(oracleTool, json.RawMessage(tc.args)); !strings.HasSuffix(got, " with "+tc.want) {
			t.Errorf("Describe(%s)\n= %s\nwant … with %s", tc.args, got, tc.want)
		}
	}
}

// TestReview24bDescribeNestedCut: a nested value is cut to 80 characters
// after the word rule was applied to the whole of it, so a word of
// lookalikes whose letter of its own script stood past the cut was shown
// bare, and its first 80 characters read as ASCII. The rule now sees what
// is shown.
func TestReview24bDescribeNestedCut(t *testing.T) {
	word := strings.Repeat("АВЕКМНОРСТХ", 10) + "ж" // Cyrillic; ж, shaped like no ASCII letter, past the cut
	args := `{"v":{"k":"` + word + `"}}`
	got := Describe(oracleTool, json.RawMessage(args))
	if strings.Contains(got, "АВЕ") {
		t.Errorf("Describe(%s)\n= %s: lookalikes shown bare", args, got)
	}
}

// TestReview24bDescribeOracleProperty is review24's property test with the
// letters above, and the text they read as, among its strings.
func TestReview24bDescribeOracleProperty(t *testing.T) {
	saved := review24Nasty
	defer func() { review24Nasty = saved }()
	review24Nasty = append(slices24(saved), "ё", "ꚙ", "Ⲻ", "Ꭾ", "ノ", "ό", "Ы", "ж", "ë", "oo", "-", "?", "/", "ó", "bl", "Ⲟ", "Ꭺ")
	r := rand.New(rand.NewPCG(24, 2027))
	seen := map[string]string{}
	fails := 0
	for i := 0; i < 3000 && fails < 10; i++ {
		m := map[string]any{}
		for range r.IntN(4) {
			var v any = review24RandString(r)
			if r.IntN(4) == 0 {
				v = map[string]any{review24RandString(r): review24RandString(r)}
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
		if strings.Contains(text, ellipsis) {
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

// TestReview24bDescribePunctuationLetters: Latin letters shaped like ASCII
// punctuation (the glottal stop ʔ, a question mark; ŉ, 'n) read as it in
// quotes.
func TestReview24bDescribePunctuationLetters(t *testing.T) {
	for _, p := range [][2]string{
		{`{"note":"say whatʔ now"}`, `{"note":"say what? now"}`},
		{`{"note":"rock ŉ roll"}`, `{"note":"rock 'n roll"}`},
	} {
		ta, tb := Describe(oracleTool, json.RawMessage(p[0])), Describe(oracleTool, json.RawMessage(p[1]))
		if ta == tb || readfold.Read(ta) == readfold.Read(tb) {
			t.Errorf("%s and %s both read, to a person, %s\n%s\n%s", p[0], p[1], readfold.Read(ta), ta, tb)
		}
	}
}
