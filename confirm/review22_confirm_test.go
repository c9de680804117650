package confirm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReview22DescribeQuoteLookalikes: strconv.Quote escapes only the
// ASCII quote and backslash, and a nested value's JSON was shown as it is,
// so a string holding characters shaped like a quote (ʺ U+02BA, ＂, ״, ″,
// “ ”, ❞, ˝) closed its quotes to the eye and forged more of the prompt:
// note="okʺ, amount=1, zʺ" read as note="ok", amount=1, z"", and an item
// whose note ended in ʺ,ʺqtyʺ:1}] and spaces read as [{"note":"gift","qty":1}]
// with the real "qty":1000 cut off past 80 characters. Inside quotes, a
// character outside ASCII that is not a letter or digit is now escaped.
func TestReview22DescribeQuoteLookalikes(t *testing.T) {
	for _, q := range []string{"ʺ", "＂", "״", "″", "“", "”", "❞", "˝", "ˮ", "〃"} {
		for _, tmpl := range []string{
			`{"note":"ok%s, amount=1, z%s"}`,
			`{"note%s=1, amount%s":1000}`,
			`{"items":[{"note":"gift%s,%sqty%s:1}]` + strings.Repeat(" ", 60) + `","qty":1000}]}`,
			`[{"note":"ok%s, amount=1, z%s"}]`,
		} {
			args := strings.ReplaceAll(tmpl, "%s", q)
			got := Describe("refund", json.RawMessage(args))
			if strings.Contains(got, q) {
				t.Errorf("Describe(%s)\n= %s\nshows %+q unescaped inside quotes", args, got, q)
			}
		}
	}
}

// TestReview22DescribeKeepsReadableText: the escaping of shapes stays off
// letters and digits (in any script) and the "…" of a cut.
func TestReview22DescribeKeepsReadableText(t *testing.T) {
	long := strings.Repeat("á b", 30)
	for _, tc := range []struct{ args, want string }{
		{`{"note":"próxima entrega"}`, `Run t with note="próxima entrega"`},
		{`{"note":"¿mañana?"}`, `Run t with note="\u00bfmañana?"`},
		{`{"note":"` + long + `"}`, `Run t with note="` + string([]rune(long)[:80]) + `…"`},
		{`{"note":"ok\u02ba"}`, `Run t with note="ok\u02ba"`},
		{`{"v":[{"note":"okʺ"}]}`, `Run t with v=[{"note":"ok\u02ba"}]`},
		{`{"v":[{"note":"mañana"}]}`, `Run t with v=[{"note":"mañana"}]`},
	} {
		if got := Describe("t", json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("Describe(%s)\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}
