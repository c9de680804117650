package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readQuotes is how a person reads quoted text: the characters shaped like
// a double quote (of other scripts, primes, the Yiddish double yod), and
// two apostrophes or backticks in a row, are the double quote.
var readQuotes = strings.NewReplacer(
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`, "\u2033", `"`, "\u02ba", `"`,
	"\u02dd", `"`, "\u02ee", `"`, "\u05f4", `"`, "\u05f2", `"`, "\u3003", `"`, "\uff02", `"`,
	"\u275e", `"`, "''", `"`, "``", `"`,
)

// looks is what a person sees of s: the variation selectors show as
// nothing after a letter, the blank Braille pattern and the no-break space
// as a space.
var looks = strings.NewReplacer("\ufe0e", "", "\ufe0f", "", "\u2800", " ", "\u00a0", " ")

// TestReview23ReasonReadsBack: the prompt of admin_disable_user, and the
// dry-run preview of the same call, show the reason (the model's free text)
// quoted on its own labelled line. Read as a person reads it, that quoted
// text must be the reason, all of it and nothing else. The reason was
// quoted with %q (strconv.Quote): a quote of another script (”, ʺ) or two
// apostrophes ended the quotation to the eye, so that what followed (" —
// test only, nothing happens") read as the server's; and the characters
// that show as nothing but are letters to strconv (the Hangul fillers,
// which the guard's cleaning then removes) and the combining grapheme
// joiner vanished, so that two reasons the gateway stores differently
// ("spam" and "sp\u3164am") read the same.
func TestReview23ReasonReadsBack(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var msg string
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	const action = "disable the account u-1002"
	seen := map[string]string{} // line shown -> reason
	for _, reason := range []string{
		"spam (dry run)",
		"sp\u3164am (dry run)", "spam\u115f\u1160 (dry run)", "spam\uffa0 (dry run)", "sp\u034fam (dry run)",
		"spam\ufe0f (dry run)", "spam\u2800(dry run)",
		"spam\u201d \u2014 test only, nothing happens",
		"spam\u02ba (dry run only) \u02ba",
		"spam'' (dry run only) ''",
		"spam`` (dry run only) ``",
		"spam\u05f4 (dry run only) \u05f4",
		"spam\uff02 (dry run only) \uff02",
		"don't spam", `spam" (dry run)`,
	} {
		for _, dry := range []bool{false, true} {
			msg = ""
			p := &mcp.CallToolParams{Name: "admin_disable_user", Arguments: map[string]any{"userId": "u-1002", "reason": reason}}
			var text string
			if dry {
				p.Meta = mcp.Meta{dryrun.MetaKey: true}
				res, we := callRaw(t, cs, p)
				if we != nil {
					t.Fatalf("dry run, reason %+q: %v", reason, we)
				}
				text, _ = toMap(t, res.StructuredContent)["summary"].(string)
			} else {
				res, we := callRaw(t, cs, p)
				if we != nil || !res.IsError {
					t.Fatalf("reason %+q: want CONFIRMATION_REQUIRED after the decline, got %v %v", reason, res, we)
				}
				text = strings.TrimPrefix(msg, "Confirm: ")
			}
			lines := strings.Split(text, "\n")
			if len(lines) != 2 || lines[0] != action {
				t.Errorf("dry run %v, reason %+q: %+q, want %q, then the reason", dry, reason, text, action)
				continue
			}
			q, ok := strings.CutPrefix(lines[1], reasonLabel)
			if !ok {
				t.Errorf("dry run %v, reason %+q: second line %+q, want it to start %q", dry, reason, lines[1], reasonLabel)
				continue
			}
			read, err := strconv.Unquote(readQuotes.Replace(q))
			if err != nil || read != reason {
				t.Errorf("dry run %v, reason %+q: shown as %s, which a person reads as %+q (%v), want the reason alone", dry, reason, q, readQuotes.Replace(q), err)
			}
			key := looks.Replace(lines[1]) + strconv.FormatBool(dry)
			if prev, dup := seen[key]; dup && prev != reason {
				t.Errorf("dry run %v: reasons %+q and %+q both read as %s", dry, prev, reason, looks.Replace(q))
			}
			seen[key] = reason
		}
	}
	if n := st.gw.count("POST", "/api/admin/users/u-1002/disable"); n != 0 {
		t.Errorf("a declined write or a dry run ran %d times", n)
	}
}
