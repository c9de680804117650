package mcpguard_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview62StepPanicBeforeTool: a panic of code of the operator's that
// a stand-alone step calls before the tool (a Cost function in Limit, a
// Describe function answering a dry run or asking for a confirmation)
// was recorded by the Audit outside as "panic", the tool's crash, and
// what the Limit steps had charged the call (its one call of the hour)
// stayed taken: the caller's next call was refused RATE_LIMIT_EXCEEDED
// though no tool ran. Such a panic is one before the tool ran (as in a
// Guard, and as the stand-alone Authenticate's was), and a call refused
// before it ran consumes nothing.
func TestReview62StepPanicBeforeTool(t *testing.T) {
	boom := func(string, map[string]any) string { panic("review62: Describe's bug") }
	for _, tc := range []struct {
		name    string
		tools   map[string]mcpguard.ToolOptions
		confirm bool // a Confirm step inside the Limit
		first   *mcp.CallToolRequest
	}{
		{"limit cost", map[string]mcpguard.ToolOptions{"add_note": {Cost: func(map[string]any) (float64, error) {
			panic("review62: Cost's bug")
		}}}, false, req("add_note", `{}`)},
		{"limit dry run", map[string]mcpguard.ToolOptions{"add_note": {Describe: boom}}, false, dryReq("add_note", `{}`)},
		{"confirm dry run", map[string]mcpguard.ToolOptions{"add_note": {Describe: boom}}, true, dryReq("add_note", `{}`)},
		{"confirm asking", map[string]mcpguard.ToolOptions{"wipe": {Describe: boom}}, true, req("wipe", `{}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			opts := &mcpguard.Options{Limiter: lim, Logger: quiet, Tools: tc.tools}
			p, m := stepPolicy(t), must(t)
			steps := []mcpguard.Middleware{
				mcpguard.Recover(quiet),
				m(mcpguard.Audit(sink, opts)),
				mcpguard.Authenticate(fixed(bob)),
				m(mcpguard.Limit(lim, p, opts)),
			}
			if tc.confirm {
				steps = append(steps, m(mcpguard.Confirm(testSigner(t, nil), p, opts)))
			}
			var s stub
			h := mcpguard.Chain(steps...)(s.handle)
			if got := codeOfCall(t, h, tc.first); got != string(mcpguard.CodeInternal) || s.ran != 0 {
				t.Fatalf("first call: %q, the tool ran %d times; want INTERNAL, not run", got, s.ran)
			}
			evs := sink.all()
			if len(evs) != 1 || evs[0].Detail != "panic before the tool ran" || evs[0].Cost != 0 {
				t.Errorf("records %+v, want one with detail %q and no cost", evs, "panic before the tool ran")
			}
			// The panic's call consumed nothing: the hour's one call is
			// still there, for a read.
			if got := codeOfCall(t, h, req("echo", `{}`)); got != "" || s.ran != 1 {
				t.Errorf("next call: %q, the tool ran %d times; want it run", got, s.ran)
			}
		})
	}
}

// TestReview62GuardDryRunDescribePanic: in a Guard, a dry run is counted
// against the call rate (step 8) before its simulated result is described
// (step 9). A Describe that panicked there left the call's count taken,
// though the call was refused and no tool ran.
func TestReview62GuardDryRunDescribePanic(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
		Limiter: lim, Logger: quiet, Audit: sink, Confirmer: testSigner(t, nil),
		Tools: map[string]mcpguard.ToolOptions{"add_note": {Describe: func(string, map[string]any) string {
			panic("review62: Describe's bug")
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var s stub
	h, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	if got := codeOfCall(t, h, dryReq("add_note", `{}`)); got != string(mcpguard.CodeInternal) {
		t.Fatalf("dry run: %q, want INTERNAL", got)
	}
	if got := codeOfCall(t, h, req("add_note", `{}`)); got != "" || s.ran != 1 {
		t.Errorf("next call: %q, the tool ran %d times; want it run (the dry run's count given back)", got, s.ran)
	}
	var outcomes []audit.Event
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome {
			outcomes = append(outcomes, e)
		}
	}
	if len(outcomes) != 2 || outcomes[0].Detail != "panic before the tool ran" || !outcomes[1].Allowed {
		t.Errorf("outcome records %+v, want the dry run's panic before the tool, then the call allowed", outcomes)
	}
}

// TestReview62StepPanicAfterTool: a panic in the tool stays the tool's
// ("panic", its charge kept) through the same stand-alone steps: only a
// step's own code before it hands the call on is "before the tool".
func TestReview62StepPanicAfterTool(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	opts := &mcpguard.Options{Limiter: lim, Logger: quiet}
	p, m := stepPolicy(t), must(t)
	s := stub{boom: true}
	h := mcpguard.Chain(
		mcpguard.Recover(quiet),
		m(mcpguard.Audit(sink, opts)),
		mcpguard.Authenticate(fixed(bob)),
		m(mcpguard.Limit(lim, p, opts)),
		m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
		m(mcpguard.DryRun(p, opts)),
		m(mcpguard.WriteAhead(sink, p, opts)),
	)(s.handle)
	if got := codeOfCall(t, h, req("echo", `{}`)); got != string(mcpguard.CodeInternal) || s.ran != 1 {
		t.Fatalf("first call: %q, ran %d; want INTERNAL after the tool ran", got, s.ran)
	}
	if evs := sink.all(); len(evs) != 1 || evs[0].Detail != "panic" {
		t.Errorf("records %+v, want one with detail %q", evs, "panic")
	}
	if got := codeOfCall(t, h, req("echo", `{}`)); got != string(mcpguard.CodeRateLimitExceeded) {
		t.Errorf("next call: %q, want RATE_LIMIT_EXCEEDED (the tool's panic keeps its charge)", got)
	}
}

// TestReview62RecoverSaysBeforeTool: the stand-alone Recover logged every
// panic below it as "tool handler panicked", a Cost function's in a Limit
// step too: it logs one of a step's own before the tool ran as such.
func TestReview62RecoverSaysBeforeTool(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Limiter: lim, Logger: quiet, Tools: map[string]mcpguard.ToolOptions{
		"add_note": {Cost: func(map[string]any) (float64, error) { panic("review62: Cost's bug") }},
	}}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	p, m := stepPolicy(t), must(t)
	var s stub
	h := mcpguard.Chain(mcpguard.Recover(log), mcpguard.Authenticate(fixed(bob)), m(mcpguard.Limit(lim, p, opts)))(s.handle)
	if got := codeOfCall(t, h, req("add_note", `{}`)); got != string(mcpguard.CodeInternal) || s.ran != 0 {
		t.Fatalf("%q, ran %d; want INTERNAL, not run", got, s.ran)
	}
	if out := logged.String(); !strings.Contains(out, "before the tool ran") || strings.Contains(out, "tool handler panicked") {
		t.Errorf("log %q, want a panic before the tool ran", out)
	}
}
