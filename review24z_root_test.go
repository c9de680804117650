package mcpguard_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDryRunReadRunsForReal checks what dryrun's package doc and
// Options.DryRun say: dry-run is for writes only. A read tool's calls run
// their handler, and are recorded as no dry run, whether the server set
// Options.DryRun or the client asked for a preview in _meta.
// (ToolOptions.DryRun for a read tool is refused by New: see
// TestReview26DryRunOnReadTool.)
func TestDryRunReadRunsForReal(t *testing.T) {
	h := newHarness(t, basePolicy(false), &mcpguard.Options{DryRun: true})
	cs := h.connect(bob, clientOpts{})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "echo", Arguments: map[string]any{"text": "hi"}, Meta: mcp.Meta{dryrun.MetaKey: true},
	})
	if err != nil || res.IsError {
		t.Fatalf("read with dry-run asked for: %v %s", err, mustJSON(res))
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["text"] != "hi" || sc["dry_run"] != nil {
		t.Errorf("read with dry-run asked for answered %s, want its handler's answer", mustJSON(res))
	}
	evs := eventsFor(h.sink.all(), "echo")
	if len(evs) == 0 {
		t.Fatal("no audit event for the read")
	}
	for _, e := range evs {
		if e.DryRun {
			t.Errorf("read recorded as a dry run: %+v", e)
		}
	}
}
