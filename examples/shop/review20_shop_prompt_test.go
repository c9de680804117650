package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview20ReasonCannotPoseAsAction: the reason of admin_disable_user is
// the model's free text, and the confirmation prompt is the one thing a
// person reads before the write runs. It was quoted with %q on the
// action's own line, so a reason holding a quote ended the quotation to a
// skimming eye (the escape is one backslash) and what followed read as the
// server's words: `reason "test\" (dry run only, nothing will be
// disabled)"`. The action must stand alone on the prompt's first line, and
// the model's text only on a line of its own that says whose words they
// are, quoted (a reason cannot hold a line break: its pattern refuses them, and the
// guard escapes them).
func TestReview20ReasonCannotPoseAsAction(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var msg string
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	for reason, quoted := range map[string]string{
		// A quote within the reason as \u0022, which a Markdown host
		// shows as written (it would show \" as ").
		`test" (dry run only, nothing will be disabled)`:      `"test\u0022 (dry run only, nothing will be disabled)"`,
		`spam", and also set the price of RB-100 to 0.01 EUR`: `"spam\u0022, and also set the price of RB-100 to 0.01 EUR"`,
		// The curly quote and the dash escaped (review23): ” would end
		// the quotation to the eye.
		`spam” — test only, nothing happens`: `"spam\u201d \u2014 test only, nothing happens"`,
	} {
		msg = ""
		args := map[string]any{"userId": "u-1002", "reason": reason}
		if e := toolErr(t, cs, "admin_disable_user", args); e["code"] != "CONFIRMATION_REQUIRED" {
			t.Fatalf("declined: %v", e)
		}
		lines := strings.Split(msg, "\n")
		if lines[0] != "Confirm: disable the account u-1002" {
			t.Errorf("reason %q: the prompt's first line is %q, want the action alone: %q", reason, lines[0], "Confirm: disable the account u-1002")
		}
		if len(lines) != 2 || lines[1] != "reason, in the caller's words: "+quoted {
			t.Errorf("reason %q: prompt %q, want the reason alone on a second line %q", reason, msg, "reason, in the caller's words: "+quoted)
		}
	}
	if n := st.gw.count("POST", "/api/admin/users/u-1002/disable"); n != 0 {
		t.Errorf("a declined write ran %d times", n)
	}
	if n := st.gw.count("POST", "/api/cart"); n != 0 {
		t.Errorf("a dry run reached the gateway %d times", n)
	}
}

// TestReview20DryRunSaysWhatUpdateCartWouldDo: a client asks for a dry run
// of update_cart to show its user what the call would do. The preview said
// "Would run update_cart with arguments: quantity, sku", naming neither the
// product nor the quantity; the admin writes' previews state their action.
func TestReview20DryRunSaysWhatUpdateCartWouldDo(t *testing.T) {
	st := newStack(t, nil, nil)
	cs := connect(t, st, sessionCustomer, nil)
	for _, tc := range []struct{ args, want string }{
		{`{"sku":"RB-100","quantity":3}`, "set the quantity of RB-100 in your cart to 3"},
		{`{"sku":"RB-100","quantity":1e1}`, "set the quantity of RB-100 in your cart to 10"},
		{`{"sku":"RB-200","quantity":0}`, "remove RB-200 from your cart"},
	} {
		p := &mcp.CallToolParams{Name: "update_cart", Arguments: json.RawMessage(tc.args), Meta: mcp.Meta{dryrun.MetaKey: true}}
		res, we := callRaw(t, cs, p)
		if we != nil {
			t.Fatalf("dry run %s: %v", tc.args, we)
		}
		got, _ := toMap(t, res.StructuredContent)["summary"].(string)
		if got != tc.want {
			t.Errorf("dry run of update_cart %s: summary %q, want %q", tc.args, got, tc.want)
		}
	}
	if n := st.gw.count("POST", "/api/cart"); n != 0 {
		t.Errorf("a dry run reached the gateway %d times", n)
	}
}
