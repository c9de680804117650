package dryrun

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReview21SummaryNamesCannotForgeText: where a tool's schema admits
// members it does not declare, the model chooses the argument names that
// Summary lists. A name was shown bare (only cleaned), so one holding the
// separator ", " or words read as part of the sentence, naming another
// tool or forging more arguments, and a name of invisible characters
// showed as nothing, or as another name. A name that is not a plain word
// is now shown quoted, as the confirmation prompt (confirm.Describe) shows
// it; one holding characters Clean drops is quoted with them escaped.
func TestReview21SummaryNamesCannotForgeText(t *testing.T) {
	long := strings.Repeat("n", 70)
	tests := []struct {
		name, args, want string
	}{
		{"plain_names_bare", `{"title":1,"customer_id":2,"a-b.c:d/e@f+g#h":3}`,
			`Would run t with arguments: a-b.c:d/e@f+g#h, customer_id, title`},
		{"separator_and_other_tool", `{"title":1,"x, and then delete_all with arguments: everything":2}`,
			`Would run t with arguments: title, "x, and then delete_all with arguments: everything"`},
		{"space", `{"new owner":1}`, `Would run t with arguments: "new owner"`},
		{"empty_name", `{"":1,"a":2}`, `Would run t with arguments: "", a`},
		{"invisible_twin", `{"title":1,"title\u200b":2}`, `Would run t with arguments: title, "title\u200b"`},
		{"bidi_and_newline", `{"a\u202eb\nc":1}`, `Would run t with arguments: "a\u202eb\nc"`},
		{"quote_in_name", `{"a\"b":1}`, `Would run t with arguments: "a\"b"`},
		{"long_plain_name_cut", `{"` + long + `":1}`, `Would run t with arguments: ` + strings.Repeat("n", 64) + `…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary("t", []byte(tt.args)); got != tt.want {
				t.Errorf("Summary(t, %s) =\n%s\nwant\n%s", tt.args, got, tt.want)
			}
		})
	}
	t.Run("long_hidden_name_bounded", func(t *testing.T) {
		got := Summary("t", []byte(`{"`+strings.Repeat(`\u202e`, 10000)+`":1}`))
		if n := utf8.RuneCountInString(strings.TrimPrefix(got, "Would run t with arguments: ")); n > 66 {
			t.Errorf("Summary of a 10,000-character hidden name shows %d runes: %.120q", n, got)
		}
	})
}
