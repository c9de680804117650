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

// TestReview62fBrailleBlankDescribe: ToolOptions.Describe's doc (8462cfa)
// says a text with nothing left to show, blank once cleaned, gives way to
// the generic description: "a human is never asked to confirm an action
// the prompt does not show". U+2800 BRAILLE PATTERN BLANK renders as an
// empty cell; the cleaning keeps it (it is a symbol, not a format
// character) and strings.TrimSpace does not count it as space, so a
// Describe that returns it alone, or with spaces, still makes the prompt
// "Confirm: ⠀", which shows nothing.
func TestReview62fBrailleBlankDescribe(t *testing.T) {
	for _, blank := range []string{"\u2800", " \u2800\u2800 \n"} {
		g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
			Logger: quiet, NoWriteAhead: true, Confirmer: testSigner(t, nil),
			Tools: map[string]mcpguard.ToolOptions{
				"wipe": {Describe: func(string, map[string]any) string { return blank }},
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
	}
}
