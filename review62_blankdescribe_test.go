package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62BlankDescribe: a ToolOptions.Describe whose text has nothing
// left to show once cleaned (empty, blank, format characters alone) made
// the confirmation prompt "Confirm: " and the dry-run summary empty: the
// human approved an action the prompt did not show. The generic
// description, naming the tool and its arguments, stands for it.
func TestReview62BlankDescribe(t *testing.T) {
	// U+2800 (Braille pattern blank) is drawn as an empty cell and kept by
	// the cleaning: blank too (62f's find).
	for _, blank := range []string{"", "  \n\t", "\u200b\u202e\u2028", "\u2800", " \u2800\u2800 \n"} {
		g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
			Logger: quiet, NoWriteAhead: true, Confirmer: testSigner(t, nil),
			Tools: map[string]mcpguard.ToolOptions{
				"wipe":     {Describe: func(string, map[string]any) string { return blank }},
				"add_note": {Describe: func(string, map[string]any) string { return blank }},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)
		wipe, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: schema}, noop)
		if err != nil {
			t.Fatal(err)
		}
		res, err := wipe(context.Background(), req("wipe", `{"target":"db-7"}`))
		if err != nil || res == nil {
			t.Fatalf("asking round: %v %v", res, err)
		}
		ep, _ := res.InputRequests[confirm.InputKey].(*mcp.ElicitParams)
		if ep == nil || !strings.Contains(ep.Message, "wipe") || !strings.Contains(ep.Message, "db-7") {
			t.Errorf("Describe %q: the prompt %+v, want one naming the tool and its arguments", blank, ep)
		}
		note, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: schema}, noop)
		if err != nil {
			t.Fatal(err)
		}
		res, err = note(context.Background(), dryReq("add_note", `{"target":"db-7"}`))
		if err != nil || res == nil || len(res.Content) == 0 {
			t.Fatalf("dry run: %v %v", res, err)
		}
		if tc, _ := res.Content[0].(*mcp.TextContent); tc == nil || !strings.Contains(tc.Text, "add_note") {
			t.Errorf("Describe %q: the dry-run summary %+v, want one naming the tool", blank, res.Content[0])
		}
	}
}
