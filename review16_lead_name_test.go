package mcpguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRecordedToolNameBounded: the audit record of a call names the tool
// a client asked for as its tool only when a tool could have that name:
// a name with a control or invisible character, or one far longer than
// any tool's, is recorded in the detail, escaped and cut, so that an
// unauthenticated client cannot write megabytes, or a bidi override, into
// the trail with every request.
func TestRecordedToolNameBounded(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{})
	ctx := context.Background()
	long := "admin_" + strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name, tool, inDetail string
	}{
		{name: "nope", tool: "nope"},
		{name: "evil\u202egnp.exe", tool: "", inDetail: `tool name "evil\u202egnp.exe"`},
		{name: "echo\x00", tool: "", inDetail: `tool name "echo\x00"`},
		{name: long, tool: "", inDetail: `tool name "admin_xxx`},
	} {
		before := len(h.sink.all())
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.name, Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("%.20q: allowed", tc.name)
		}
		evs := h.sink.all()[before:]
		if len(evs) != 1 {
			t.Fatalf("%.20q: %d records, want 1", tc.name, len(evs))
		}
		e := evs[0]
		if e.Tool != tc.tool || !strings.Contains(e.Detail, tc.inDetail) || len(e.Detail) > 400 {
			t.Errorf("%.20q: record tool %.40q detail %.200q (%d bytes); want tool %q, detail with %q, at most 400 bytes",
				tc.name, e.Tool, e.Detail, len(e.Detail), tc.tool, tc.inDetail)
		}
	}
}
