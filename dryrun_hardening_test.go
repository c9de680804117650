package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drChargeServer is a server with one write tool, "charge", whose handler
// fails with an error that quotes its argument (as many real handlers do:
// fmt.Errorf("card %s declined", card)). It is guarded with opts.
func drChargeServer(t *testing.T, opts mcpguard.Options) (*mcp.ClientSession, *memSink) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "charge", InputSchema: json.RawMessage(`{"type":"object","properties":{"card":{"type":"string"}},"required":["card"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Card string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			if dryrun.FromContext(ctx) {
				return nil, fmt.Errorf("preview failed: card %s unknown", in.Card)
			}
			return nil, fmt.Errorf("card %s declined (api key sk_live_SECRET)", in.Card)
		})
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "charge", Class: policy.Write}},
		WriteAllowlist: []string{"charge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	opts.Audit = sink
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth.mu.Lock()
	auth.ids[ss] = bob
	auth.mu.Unlock()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs, sink
}

// TestHandlerErrorTextNotAudited: the audit record's Detail holds "never
// secrets or raw args" (audit.Event), and raw arguments are recorded only
// where a tool opts in per field: a handler's error text, which may hold
// either, stays out of it (as out of the result), in a write and in an
// aware dry run.
func TestHandlerErrorTextNotAudited(t *testing.T) {
	const card = "4111111111111111"
	for _, tc := range []struct {
		name string
		opts mcpguard.Options
		meta mcp.Meta
	}{
		{"write", mcpguard.Options{}, nil},
		{"aware_dry_run", mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"charge": {DryRunAware: true}}}, mcp.Meta{dryrun.MetaKey: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, sink := drChargeServer(t, tc.opts)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"card": card}, Meta: tc.meta})
			if err != nil {
				t.Fatal(err)
			}
			if out := mustJSON(res); strings.Contains(out, card) {
				t.Fatalf("result leaks the argument: %s", out)
			}
			for _, e := range sink.all() {
				if e.Tool != "charge" {
					continue
				}
				if strings.Contains(e.Detail, card) || strings.Contains(e.Detail, "sk_live_SECRET") {
					t.Errorf("%s audit record (dry_run=%v) records a raw argument value / secret in detail, which must never hold them: %q", e.Phase, e.DryRun, e.Detail)
				}
			}
		})
	}
}

// TestHandlerErrorSecretNotAudited: the harness's own err_tool, whose error
// text holds a password, leaves it out of the audit trail.
func TestHandlerErrorSecretNotAudited(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{})
	if _, err := call(t, cs, "err_tool", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range eventsFor(h.sink.all(), "err_tool") {
		found = true
		if strings.Contains(e.Detail, "hunter2") {
			t.Errorf("audit detail holds the handler's secret: %q", e.Detail)
		}
	}
	if !found {
		t.Fatal("no audit record for err_tool")
	}
}
