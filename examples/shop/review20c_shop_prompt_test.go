package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// plainLine reports whether s shows every one of its characters: no
// control, format, line or paragraph separator, nor default-ignorable
// character.
func plainLine(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point) {
			return false
		}
	}
	return true
}

// TestReview20cReasonPromptHostileText: the reason is the model's free
// text and reaches the confirmation prompt. Whatever it holds (line and
// paragraph separators, NEL, bidi controls and isolates, zero-width and
// invisible characters, Hangul fillers, combining marks, blanks of other
// widths, escapes, the longest reason), the call is either refused as
// INVALID_ARGUMENTS with no one asked, or the prompt has exactly two
// lines: the action alone, then the labelled, quoted reason, in which no
// character hides.
func TestReview20cReasonPromptHostileText(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var msg string
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	const action = "Confirm: disable the account u-1002"
	for _, reason := range []string{
		"late\u2028Confirm: nothing", "late\u2029nothing", "spam\u0085Nothing", "spam\u202e(dry run)", "spam\u2066x\u2069",
		"spam\u200b\u200d", "spam\ufeff", "spam\u061c", "spam\u180e", "spam\U000e0041", "spam\x7f", "spam\u00ad",
		"spam\u3164\u3164\u3164\u3164 (dry run)", "spam\u115f\u1160\uffa0", "spam\u034f\u17b4", "\u0338spam", "spam\u0338\"",
		"spam\u00a0\u00a0\u2003\u3000(dry run)", `spam\" (dry run only)`, `spam\\" (dry run only)`, `spam\n(dry run)`,
		"spam\"\nConfirm: nothing", "spam\r\nnothing", "spam\tnothing",
		strings.Repeat("Ω", 200), strings.Repeat("\"", 200),
	} {
		msg = ""
		e := toolErr(t, cs, "admin_disable_user", map[string]any{"userId": "u-1002", "reason": reason})
		switch e["code"] {
		case "INVALID_ARGUMENTS":
			if msg != "" {
				t.Errorf("reason %+q: refused, but asked %q", reason, msg)
			}
			continue
		case "CONFIRMATION_REQUIRED":
		default:
			t.Errorf("reason %+q: %v", reason, e)
			continue
		}
		lines := strings.Split(msg, "\n")
		if len(lines) != 2 || lines[0] != action {
			t.Errorf("reason %+q: prompt %+q, want the action %q alone, then the reason", reason, msg, action)
			continue
		}
		q, ok := strings.CutPrefix(lines[1], reasonLabel)
		if !ok || len(q) < 2 || q[0] != '"' || !strings.HasSuffix(q, `"`) || !plainLine(lines[1]) {
			t.Errorf("reason %+q: second line %+q, want %q and the reason quoted, every character shown", reason, lines[1], reasonLabel)
		}
	}
	if n := st.gw.count("POST", "/api/admin/users/u-1002/disable"); n != 0 {
		t.Errorf("a declined write ran %d times", n)
	}
}

// TestReview20cPreviewsOneLine: the dry-run preview of every write is one
// line stating its action with the values the gateway would get, whatever
// the spelling of the numbers; the reason stays on its own labelled line.
func TestReview20cPreviewsOneLine(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	cs := connect(t, st, sessionAdmin, nil)
	for _, tc := range []struct{ tool, args, want string }{
		{"update_cart", `{"sku":"RB-100","quantity":2.0}`, "set the quantity of RB-100 in your cart to 2"},
		{"update_cart", `{"sku":"RB-100","quantity":-0}`, "remove RB-100 from your cart"},
		{"update_cart", `{"sku":"RB-100","quantity":0e5}`, "remove RB-100 from your cart"},
		{"update_cart", `{"quantity":20,"sku":"RB-100"}`, "set the quantity of RB-100 in your cart to 20"},
		{"admin_set_price", `{"sku":"RB-100","price":1e5}`, "set the price of RB-100 to 100000.00 EUR"},
		{"admin_set_price", `{"sku":"RB-100","price":0.10}`, "set the price of RB-100 to 0.10 EUR"},
		{"admin_set_stock", `{"sku":"RB-100","stock":1E3}`, "set the stock of RB-100 to 1000 units"},
		{"admin_disable_user", `{"userId":"u-1","reason":"a\" b"}`, "disable the account u-1\n" + reasonLabel + `"a\u0022 b"`},
	} {
		p := &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args), Meta: mcp.Meta{dryrun.MetaKey: true}}
		res, we := callRaw(t, cs, p)
		if we != nil {
			t.Fatalf("dry run %s %s: %v", tc.tool, tc.args, we)
		}
		if got, _ := toMap(t, res.StructuredContent)["summary"].(string); got != tc.want {
			t.Errorf("dry run of %s %s: summary %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
	for _, w := range [][2]string{{"POST", "/api/cart"}, {"PUT", "/api/admin/products/RB-100/price"}, {"PUT", "/api/admin/products/RB-100/stock"}, {"POST", "/api/admin/users/u-1/disable"}} {
		if n := st.gw.count(w[0], w[1]); n != 0 {
			t.Errorf("a dry run reached the gateway: %s %s %d times", w[0], w[1], n)
		}
	}
}
