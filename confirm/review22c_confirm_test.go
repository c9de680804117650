package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReview22cDescribeLetterQuotes: letters shaped like a quote (the
// Yiddish double yod ײ, the Canadian syllabics finals ᐦ and ᐥ) were shown
// as they are inside the quotes of a value and in a nested value's JSON,
// so note="okײ, amount=1, zײ" read as note="ok", amount=1, z"".
func TestReview22cDescribeLetterQuotes(t *testing.T) {
	for _, q := range []string{"\u05f2", "\u1426", "\u1425"} {
		for _, tmpl := range []string{
			`{"note":"ok%s, amount=1, z%s"}`,
			`{"note%s=1, amount%s":1000}`,
			`{"items":[{"note":"gift%s,%sqty%s:1}]","qty":1000}]}`,
		} {
			args := strings.ReplaceAll(tmpl, "%s", q)
			if got := Describe("refund", json.RawMessage(args)); strings.Contains(got, q) {
				t.Errorf("Describe(%s)\n= %s\nshows %+q unescaped", args, got, q)
			}
		}
	}
}
