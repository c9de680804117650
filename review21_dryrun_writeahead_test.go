package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview21WriteAheadAnswersDryRuns builds the stand-alone chain a server
// without a Limit, Confirm or DryRun step may use (Audit, Authenticate,
// Authorize, ValidateArguments, WriteAhead) on a real server, and has a
// client ask for a preview of a write with the dryrun.MetaKey _meta key.
// WriteAhead treats such a call as a dry run (it records no intent), so it
// must answer it itself as the DryRun step would: before, it passed the call
// on, the handler wrote for real with no write-ahead intent, and the outcome
// record said dry_run true. A model could skip the intent of any write by
// asking for a preview. A real call still gets its intent and runs; an
// aware handler is called with the dry-run context.
func TestReview21WriteAheadAnswersDryRuns(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write}, {Name: "pay_aware", Class: policy.Write}},
		WriteAllowlist: []string{"pay", "pay_aware"},
	})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"additionalProperties":false}`)
	in, err := mcpguard.NewValidator(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	o := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"pay_aware": {DryRunAware: true}}}
	ahead, err := mcpguard.WriteAhead(sink, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	chain := mcpguard.Chain(mcpguard.Recover(quiet), mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)),
		mcpguard.Authorize(pol), mcpguard.ValidateArguments(in), ahead)
	var wrote, previewed atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	for _, name := range []string{"pay", "pay_aware"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, chain(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if dryrun.FromContext(ctx) {
				previewed.Add(1)
				return textResult("would pay"), nil
			}
			wrote.Add(1)
			return textResult("paid"), nil
		}))
	}
	cs := connectPlain(t, srv, nil)
	callMeta := func(name string, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"amount": 5}, Meta: meta})
		if err != nil || res.IsError {
			t.Fatalf("CallTool(%s, _meta %v) = %v, %s", name, meta, err, mustJSON(res))
		}
		return res
	}

	res := callMeta("pay", mcp.Meta{dryrun.MetaKey: true})
	if n := wrote.Load(); n != 0 {
		t.Fatalf("a dry run of pay through WriteAhead wrote %d time(s) for real, want 0", n)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
		t.Errorf("dry run of pay answered %s, want the simulated result", mustJSON(res))
	}
	if got := callMeta("pay_aware", mcp.Meta{"IO.MCPGUARD/DRYRUN": "yes"}); got.Content[0].(*mcp.TextContent).Text != "would pay" {
		t.Errorf("dry run of an aware tool answered %s, want its dry-run branch", mustJSON(got))
	}
	if wrote.Load() != 0 || previewed.Load() != 1 {
		t.Errorf("after the aware dry run: wrote %d, previewed %d; want 0 and 1", wrote.Load(), previewed.Load())
	}
	callMeta("pay", nil)
	if wrote.Load() != 1 {
		t.Errorf("a real call wrote %d time(s), want 1", wrote.Load())
	}

	var got []string
	for _, e := range sink.all() {
		got = append(got, string(e.Phase)+" "+e.Tool+" dry="+map[bool]string{true: "true", false: "false"}[e.DryRun])
	}
	want := []string{"outcome pay dry=true", "outcome pay_aware dry=true", "intent pay dry=false", "outcome pay dry=false"}
	if mustJSON(got) != mustJSON(want) {
		t.Errorf("records %v, want %v", got, want)
	}
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome && (!e.Allowed || e.Code != "") {
			t.Errorf("outcome record %+v, want allowed with no code", e)
		}
	}
}
