package mcpguard_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview25dWriteAheadOfServerDryRun: a chain whose DryRun step has the
// server's dry-run settings (opts.DryRun, or the tool's DryRun) and whose
// WriteAhead step has the settings WriteAhead's doc says it takes (ArgsKey,
// SessionKey, Now, Logger, RequestIDHeader, RecordArgs; no DryRun). A dry
// run of a DryRunAware tool reaches WriteAhead with the dry-run context of
// that same call. Before, WriteAhead took it for a write: it recorded a
// write-ahead intent for a write that never happened and told the Audit
// middleware the call was no dry run (outcome dry_run false), so the trail
// showed a real write.
func TestReview25dWriteAheadOfServerDryRun(t *testing.T) {
	p := stepPolicy(t)
	aware := map[string]mcpguard.ToolOptions{"add_note": {DryRunAware: true}}
	for name, dopts := range map[string]*mcpguard.Options{
		"server": {Logger: quiet, DryRun: true, Tools: aware},
		"tool":   {Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"add_note": {DryRunAware: true, DryRun: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			sink := &memSink{}
			o := &mcpguard.Options{Logger: quiet}
			real := 0
			h := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p),
				must(t)(mcpguard.DryRun(p, dopts)), must(t)(mcpguard.WriteAhead(sink, p, o)))(
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if !dryrun.FromContext(ctx) {
						real++
					}
					return textResult("would note"), nil
				})
			res, err := h(context.Background(), req("add_note", `{"title":"t"}`))
			if got := codeOf(t, res, err); got != "" || real != 0 {
				t.Fatalf("server-configured dry run: %q, real runs %d: %s", got, real, mustJSON(res))
			}
			evs := sink.all()
			for _, ev := range evs {
				if ev.Phase == audit.PhaseIntent {
					t.Errorf("a write-ahead intent was recorded for a dry run: %+v", ev)
				}
			}
			if len(evs) == 0 || !evs[len(evs)-1].DryRun {
				t.Errorf("outcome record of a dry run: %+v, want dry_run true", evs)
			}
		})
	}
}

// TestReview25dGuardedCallInDryRunContext: a DryRunAware handler (a
// dispatcher) that serves its dry run by calling another guarded write
// with the context it was given, with a request of its own that does not
// ask for a preview. The context says the call is a dry run: the guard
// around the other write must not write for real. Before, that write's
// Guard (or stand-alone chain) decided from its own request and options
// only: its handler, not dry-run aware, wrote, while the outer call was
// answered and recorded as a dry run.
func TestReview25dGuardedCallInDryRunContext(t *testing.T) {
	p := stepPolicy(t)
	sink := &memSink{}
	var s stub
	// The inner write: a Guard of its own, and a stand-alone chain.
	ig, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Logger: quiet, Audit: sink, Confirmer: testSigner(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	innerGuard, err := ig.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	o := &mcpguard.Options{Logger: quiet}
	innerChain := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p),
		must(t)(mcpguard.WriteAhead(sink, p, o)))(s.handle)
	for name, inner := range map[string]mcp.ToolHandler{"guard": innerGuard, "chain": innerChain} {
		t.Run(name, func(t *testing.T) {
			dispatch := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return inner(ctx, req("add_note", `{"title":"t"}`))
			}
			og, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Logger: quiet, Audit: sink, Confirmer: testSigner(t, nil),
				Tools: map[string]mcpguard.ToolOptions{"wipe": {DryRunAware: true}}})
			if err != nil {
				t.Fatal(err)
			}
			outer, err := og.Wrap(&mcp.Tool{Name: "wipe", InputSchema: noteSchema}, dispatch)
			if err != nil {
				t.Fatal(err)
			}
			s.ran = 0
			res, err := outer(context.Background(), dryReq("wipe", `{"title":"t"}`))
			if got := codeOf(t, res, err); got != "" {
				t.Fatalf("dry run of the dispatcher: %q: %s", got, mustJSON(res))
			}
			if s.ran != 0 {
				t.Fatalf("the inner write ran %d time(s) for real in a dry run, want 0", s.ran)
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
				t.Errorf("inner call answered %s, want the simulated result", mustJSON(res))
			}
		})
	}
}
