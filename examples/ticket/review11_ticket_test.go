package main

import (
	"context"
	"net/http"
	"testing"
)

// TestReview11DemoAuditShowsOnlyThisRun: the demo's "Audit trail of
// session" section shows the burst of this run. Run twice with the same
// --audit-dir (the trail kept, as asked), the second run must not list the
// first run's records as its own.
func TestReview11DemoAuditShowsOnlyThisRun(t *testing.T) {
	dir := t.TempDir()
	for run := 1; run <= 2; run++ {
		code, out, errOut := runCLI(t, "demo", "--audit-dir", dir)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, errOut)
		}
		if got := len(burstSessionLine.FindAllString(out, -1)); got != 6 {
			t.Errorf("run %d: %d audit lines of the burst session, want the 6 of this run:\n%s", run, got, out)
		}
	}
}

// TestReview11ConfiguredDescriptionIsWhatClientsSee: server.yaml's tools
// section holds each tool's description (the seed's tool_registry); the
// registry that `tools` and GET /tools show for a security review must be
// what an MCP client (and so the model) is told, not a second text in code.
func TestReview11ConfiguredDescriptionIsWhatClientsSee(t *testing.T) {
	const desc = "Search the engineering wiki of your own team only (read-only)."
	ta := newTestApp(t, func(c *config) {
		tc := c.Tools["search_docs"]
		tc.Description = desc
		c.Tools["search_docs"] = tc
	})
	for _, e := range ta.cfg().registry() {
		if e.Name == "search_docs" && e.Description != desc {
			t.Fatalf("registry description %q, want %q", e.Description, desc)
		}
	}
	ctx := context.Background()
	cs, err := ta.rest.get(ctx, "list", "alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx = context.WithValue(ctx, headerKey{}, http.Header{"Authorization": {"Bearer token-alice"}})
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range res.Tools {
		if tool.Name == "search_docs" {
			found = true
			if tool.Description != desc {
				t.Errorf("tools/list describes search_docs as %q; server.yaml (and GET /tools) say %q", tool.Description, desc)
			}
		}
	}
	if !found {
		t.Fatal("search_docs not listed")
	}
}
