package confirm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/readfold"
)

// Third round on the look-alike escaping: a word wholly in one other
// script was shown bare when it held a letter of that script shaped like
// no ASCII one, though another script with lookalikes has a letter like
// each of its letters (Cyrillic П and Greek Π, к and κ): to=ПАР and
// to=ΠΑΡ, two recipients to a server, read alike in the consent prompt.

// review24cTwins folds the letters of the pairs below to one of them: the
// Cyrillic and Armenian ones to the Greek ones they look like.
var review24cTwins = strings.NewReplacer("П", "Π", "Г", "Γ", "Ф", "Φ", "к", "κ", "т", "τ", "п", "π",
	"Փ", "Φ", "К", "Κ", "Т", "Τ", "А", "Α", "Р", "Ρ", "а", "α", "Е", "Ε", "Н", "Η", "О", "Ο", "о", "ο")

// review24cSpoofs are arguments that read, letter for letter, as the
// arguments beside them (Cyrillic, Greek).
var review24cSpoofs = [][2]string{
	{`{"to":"ПАР"}`, `{"to":"ΠΑΡ"}`},
	{`{"to":"ТАГ"}`, `{"to":"ΤΑΓ"}`},
	{`{"to":"ПФ"}`, `{"to":"ΠΦ"}`},
	{`{"ПАР":1}`, `{"ΠΑΡ":1}`},                       // a key
	{`{"note":"pay как"}`, `{"note":"pay κακ"}`},     // in a sentence
	{`{"v":{"to":"КАРТА"}}`, `{"v":{"to":"ΚΑΡΤΑ"}}`}, // nested
	{`{"v":["ТОП","ПФ"]}`, `{"v":["ΤΟΠ","ΠΦ"]}`},     // in an array
	{`{"to":"Փ"}`, `{"to":"Φ"}`},                     // Armenian, Greek
	{`{"to":"` + strings.Repeat("a", 76) + ` ПАР"}`, `{"to":"` + strings.Repeat("a", 76) + ` ΠΑΡ"}`}, // at the cut
}

// TestReview24cDescribeWholeScriptTwins: such arguments do not read alike
// in the consent prompt, and the oracle reads each as sent.
func TestReview24cDescribeWholeScriptTwins(t *testing.T) {
	read := func(s string) string { return review24cTwins.Replace(readfold.Read(s)) }
	for _, p := range review24cSpoofs {
		for _, a := range p {
			if !oracleInDomain(a) {
				t.Fatalf("%s: not in the guard's domain", a)
			}
			if err := checkParsesBack(Describe, a); err != nil {
				t.Errorf("Describe(%s)\n= %v", a, err)
			}
		}
		ta, tb := Describe(oracleTool, json.RawMessage(p[0])), Describe(oracleTool, json.RawMessage(p[1]))
		if read(ta) == read(tb) {
			t.Errorf("%s and %s both read, to a person, %s\n%s\n%s", p[0], p[1], read(ta), ta, tb)
		}
	}
	// Text a person writes in Russian, Greek, Armenian or Hebrew stays
	// readable: only its words that another script spells alike are escaped.
	for _, tc := range []struct{ args, want string }{
		{`{"city":"Москва"}`, `city=Москва`},
		{`{"to":"Пж"}`, `to=Пж`},
		{`{"note":"Перевести 500 рублей на карту Анны"}`,
			`note="Перевести 500 рублей на \u043a\u0430\u0440\u0442\u0443 Анны"`},
		{`{"note":"Καλημέρα κόσμε"}`, `note="Καλημέρα κόσμε"`},
		{`{"city":"Երևան"}`, `city=Երևան`},
		{`{"note":"שלום עולם"}`, `note="שלום עולם"`},
	} {
		if got := Describe(oracleTool, json.RawMessage(tc.args)); !strings.HasSuffix(got, " with "+tc.want) {
			t.Errorf("Describe(%s) = %s, want it to end in %s", tc.args, got, tc.want)
		}
	}
}
