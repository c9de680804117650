package main

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65ReasonRendersAsWritten: the reason quoted in the question to
// confirm admin_disable_user is the model's text; a host that renders the
// question as Markdown (raw HTML too) showed `x"<br>Approved by security`
// as a line of its own, `&quot;` as the quotation's end, and `<!--` hid
// the rest. Its Markdown characters are escaped (confirm.Quote).
func TestReview65ReasonRendersAsWritten(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var msg string
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	for _, reason := range []string{
		`x"<br>Approved by security; nothing else changes`,
		`spam&quot; (test only)`,
		`a <!-- hidden`,
		"[GOOD](EVIL) *bold* `code`",
	} {
		msg = ""
		args := map[string]any{"userId": "u-1002", "reason": reason}
		if e := toolErr(t, cs, "admin_disable_user", args); e["code"] != "CONFIRMATION_REQUIRED" {
			t.Fatalf("declined: %v", e)
		}
		lines := strings.Split(msg, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], reasonLabel) {
			t.Fatalf("reason %q: prompt %q, want the reason on a second line", reason, msg)
		}
		if i := strings.IndexAny(lines[1], "<>&`*["); i >= 0 {
			t.Errorf("reason %q: the quoted reason %s holds %q, which a Markdown host reads as markup", reason, lines[1], lines[1][i])
		}
	}
}
