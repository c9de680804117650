package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview22ConfirmLimitDryRunAwareCountsOnce: a dry run of a confirmed
// write tool whose options declare DryRunAware, through Confirm and Limit
// sharing a limiter (in either order), counts once against the call rate
// and holds one in-flight slot, as in a Guard. Before, each step counted
// it and held a slot while the handler ran inside both: under a rate of
// one per hour, or one call in flight, every such dry run was refused.
func TestReview22ConfirmLimitDryRunAwareCountsOnce(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	for _, order := range []string{"confirm_outside", "limit_outside"} {
		for _, kind := range []limiter.Kind{limiter.Rate, limiter.Concurrency} {
			t.Run(order+"_"+kind.String(), func(t *testing.T) {
				l := limiter.Limit{Kind: kind, Scope: limiter.User, Max: 1, Window: time.Hour}
				if kind == limiter.Concurrency {
					l.Window = 0
				}
				lim, err := limiter.New([]limiter.Limit{l}, nil)
				if err != nil {
					t.Fatal(err)
				}
				opts := &mcpguard.Options{Limiter: lim, Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"wipe": {DryRunAware: true}}}
				cs := m(mcpguard.Confirm(testSigner(t, nil), p, opts))
				ls := m(mcpguard.Limit(lim, p, opts))
				steps := []mcpguard.Middleware{mcpguard.Authenticate(fixed(bob)), cs, ls}
				if order == "limit_outside" {
					steps[1], steps[2] = ls, cs
				}
				previews := 0
				h := mcpguard.Chain(steps...)(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if !dryrun.FromContext(ctx) {
						t.Error("the handler ran for real")
					}
					previews++
					return textResult("would wipe"), nil
				})
				res, err := h(context.Background(), dryReq("wipe", `{"target":"db-1"}`))
				if got := codeOf(t, res, err); got != "" || previews != 1 {
					t.Fatalf("dry run of an aware tool under a cap of 1: %q, previews %d; want it answered by the handler once: %s", got, previews, mustJSON(res))
				}
				// Counted once, not never: a second one meets the rate.
				res, err = h(context.Background(), dryReq("wipe", `{"target":"db-1"}`))
				want := map[limiter.Kind]string{limiter.Rate: "RATE_LIMIT_EXCEEDED", limiter.Concurrency: ""}[kind]
				if got := codeOf(t, res, err); got != want {
					t.Errorf("second dry run: %q, want %q", got, want)
				}
			})
		}
	}
}

// TestReview22OptionsToolsCopied: New, and the stand-alone steps, copy
// Options.Tools, as every other setting of Options is taken (STYLE rule
// 6). Before, the guard kept the caller's map and read it on every call:
// a server that added a tool's options to that map while calls were in
// flight (with a tool added at run time, say) raced with them (a Go map
// read and written at once ends the process), and an entry changed after
// New took effect unchecked (one for a tool the policy does not know,
// which New refuses, too).
func TestReview22OptionsToolsCopied(t *testing.T) {
	p := stepPolicy(t)
	tools := map[string]mcpguard.ToolOptions{"echo": {}}
	opts := &mcpguard.Options{Audit: &memSink{}, Logger: quiet, Tools: tools, Confirmer: testSigner(t, nil)}
	g, err := mcpguard.New(p, fixed(bob), opts)
	if err != nil {
		t.Fatal(err)
	}
	var s stub
	h, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	ls := must(t)(mcpguard.Limit(dsSpendLimiter(t, nil, nil), p, opts))
	var s2 stub
	lh := mcpguard.Authenticate(fixed(bob))(ls(s2.handle))
	note := func() *mcp.CallToolRequest { return req("add_note", `{"title":"t"}`) }

	// An entry changed after New: the guard keeps what it was given.
	tools["add_note"] = mcpguard.ToolOptions{DryRun: true}
	res, err := h(context.Background(), note())
	if got := codeOf(t, res, err); got != "" || s.ran != 1 {
		t.Errorf("Guard: add_note after its options changed: %q, ran %d; want it run as configured at New: %s", got, s.ran, mustJSON(res))
	}
	res, err = lh(context.Background(), note())
	if got := codeOf(t, res, err); got != "" || s2.ran != 1 {
		t.Errorf("Limit: add_note after its options changed: %q, ran %d; want it run as configured: %s", got, s2.ran, mustJSON(res))
	}

	// Written while calls run: no data race (go test -race).
	hs, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, dsSafe)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			tools["add_note"] = mcpguard.ToolOptions{Timeout: time.Duration(i+1) * time.Second}
		}
	}()
	for range 100 {
		res, err := hs(context.Background(), note())
		if got := codeOf(t, res, err); got != "" {
			t.Fatalf("add_note: %q", got)
		}
	}
	<-done
}

// TestReview22WriteAheadDryRunOfAnotherCall: WriteAhead passes a dry run on
// to its handler only when a step outside it answered that same call by
// calling a DryRunAware handler. A DryRunAware handler of an outer guarded
// call (a dispatcher) that passes a dry run of another write on to the
// chain of that write, with its own dry-run context, has not answered it:
// before, WriteAhead took the context's mark for its own call's, and the
// inner write's handler, not dry-run aware, wrote for real.
func TestReview22WriteAheadDryRunOfAnotherCall(t *testing.T) {
	p := stepPolicy(t)
	sink := &memSink{}
	o := &mcpguard.Options{Logger: quiet, Confirmer: testSigner(t, nil)}
	ahead := must(t)(mcpguard.WriteAhead(sink, p, o))
	wrote := 0
	inner := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p), ahead)(
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			wrote++
			return textResult("noted"), nil
		})
	// The dispatcher: an aware tool that, in a dry run, asks the inner
	// tool for a dry run of its own.
	dispatch := func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sub := dryReq("add_note", `{"title":"t"}`)
		if !dryrun.FromContext(ctx) {
			sub = req("add_note", `{"title":"t"}`)
		}
		return inner(ctx, sub)
	}
	aware := &mcpguard.Options{Logger: quiet, Confirmer: testSigner(t, nil), Audit: sink,
		Tools: map[string]mcpguard.ToolOptions{"wipe": {DryRunAware: true}}}
	g, err := mcpguard.New(p, fixed(bob), aware)
	if err != nil {
		t.Fatal(err)
	}
	gh, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: noteSchema}, dispatch)
	if err != nil {
		t.Fatal(err)
	}
	dry := must(t)(mcpguard.DryRun(p, aware))
	sh := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), dry)(dispatch)
	for name, outer := range map[string]mcp.ToolHandler{"guard": gh, "dryrun_step": sh} {
		t.Run(name, func(t *testing.T) {
			wrote = 0
			res, err := outer(context.Background(), dryReq("wipe", `{"title":"t"}`))
			if got := codeOf(t, res, err); got != "" {
				t.Fatalf("dry run of the dispatcher: %q: %s", got, mustJSON(res))
			}
			if wrote != 0 {
				t.Fatalf("the inner write ran %d time(s) for real in a dry run, want 0", wrote)
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
				t.Errorf("inner dry run answered %s, want the simulated result", mustJSON(res))
			}
		})
	}
}

// TestReview22ConfirmAnswersEveryDryRun: Confirm, which takes the dry-run
// settings and tells the Audit middleware a call is a dry run, answers
// the dry run of every write tool itself, as Limit and WriteAhead do, not
// only of those it would ask to confirm. Before, a dry run of a write
// without a Confirm rule went on to the handler: in a chain without a
// Limit, DryRun or WriteAhead step the handler wrote for real, and the
// record said dry_run true.
func TestReview22ConfirmAnswersEveryDryRun(t *testing.T) {
	p := stepPolicy(t)
	sink := &memSink{}
	o := &mcpguard.Options{Logger: quiet}
	var s stub
	h := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p),
		must(t)(mcpguard.Confirm(testSigner(t, nil), p, o)))(s.handle)
	res, err := h(context.Background(), dryReq("add_note", `{"title":"t"}`))
	if got := codeOf(t, res, err); got != "" || s.ran != 0 {
		t.Fatalf("dry run of add_note through Confirm: %q, the handler ran %d time(s); want a simulated answer", got, s.ran)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
		t.Errorf("dry run answered %s, want the simulated result", mustJSON(res))
	}
	// A read, dry-run key or not, and a real write go on to the handler.
	for i, r := range []*mcp.CallToolRequest{dryReq("echo", `{"text":"x"}`), req("add_note", `{"title":"t"}`)} {
		res, err := h(context.Background(), r)
		if got := codeOf(t, res, err); got != "" || s.ran != i+1 {
			t.Fatalf("%s: %q, the handler ran %d time(s), want %d", r.Params.Name, got, s.ran, i+1)
		}
	}
	var got []string
	for _, e := range sink.all() {
		got = append(got, fmt.Sprintf("%s %s dry_run=%v", e.Tool, e.Code, e.DryRun))
	}
	want := []string{"add_note  dry_run=true", "echo  dry_run=false", "add_note  dry_run=false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// TestReview22FoldedNameGetsToolOptions: a name that equals a tool rule's
// only under case folding gets that rule (combined with the default
// rule: see policy.Resolve), for a server that matches names leniently
// runs that tool under it. It gets the tool's options too, where they
// protect: a dry run when the tool's options set DryRun, and the tool's
// Cost, the larger with its own. Before, the options were looked up by
// the name as called: "SEARCH" spent nothing of a cap its tool's Cost
// charges, and "PAY" wrote for real where "pay" is always a dry run.
func TestReview22FoldedNameGetsToolOptions(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read},
			{Name: "pay", Class: policy.Write},
		},
		Default:        &policy.ToolRule{Class: policy.Read},
		WriteAllowlist: []string{"pay", "PAY"},
	})
	if err != nil {
		t.Fatal(err)
	}
	five := func(map[string]any) (float64, error) { return 5, nil }
	schema := json.RawMessage(`{"type":"object"}`)
	// Each returns the handlers of search and pay, every spelling of
	// whose names reaches them (a lenient router), over a fresh limiter.
	build := map[string]func(h mcp.ToolHandler) (search, pay mcp.ToolHandler){
		"guard": func(h mcp.ToolHandler) (mcp.ToolHandler, mcp.ToolHandler) {
			opts := &mcpguard.Options{Logger: quiet, Limiter: dsSpendLimiter(t, nil, nil), NoWriteAhead: true,
				Tools: map[string]mcpguard.ToolOptions{"search": {Cost: five}, "pay": {DryRun: true}}}
			g, err := mcpguard.New(p, fixed(bob), opts)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := g.Wrap(&mcp.Tool{Name: "search", InputSchema: schema}, h)
			if err != nil {
				t.Fatal(err)
			}
			gp, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: schema}, h)
			if err != nil {
				t.Fatal(err)
			}
			return gs, gp
		},
		"steps": func(h mcp.ToolHandler) (mcp.ToolHandler, mcp.ToolHandler) {
			lim := dsSpendLimiter(t, nil, nil)
			opts := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"search": {Cost: five}, "pay": {DryRun: true}}}
			chain := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), must(t)(mcpguard.Limit(lim, p, opts)),
				must(t)(mcpguard.DryRun(p, opts)))(h)
			return chain, chain
		},
	}
	for name, b := range build {
		t.Run(name, func(t *testing.T) {
			var s stub
			search, pay := b(s.handle)
			// Two searches of cost 5 fill the cap of 10, whatever the
			// spelling; a third is refused.
			for i, name := range []string{"SEARCH", "Search", "search"} {
				res, err := search(context.Background(), req(name, `{}`))
				want := ""
				if i == 2 {
					want = "SPEND_LIMIT_EXCEEDED"
				}
				if got := codeOf(t, res, err); got != want {
					t.Fatalf("%s: %q, want %q: %s", name, got, want, mustJSON(res))
				}
			}
			res, err := pay(context.Background(), req("PAY", `{}`))
			if got := codeOf(t, res, err); got != "" || s.ran != 2 {
				t.Fatalf("PAY: %q, the handler ran %d time(s) in all, want 2 (the searches): a dry run: %s", got, s.ran, mustJSON(res))
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
				t.Errorf("PAY answered %s, want the simulated result of a dry run", mustJSON(res))
			}
		})
	}
}
