package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview22bWriteAheadDryRunReentered: a DryRunAware handler of an outer
// guarded call that passes its own request on, as it came, to another
// guarded chain (one with an Audit of its own: a router in front of a
// backend's chain) has answered the outer dry run, not the inner chain's.
// The inner WriteAhead must answer that dry run as its own options say:
// its handler does not know of dry runs, so with a simulated result. Before,
// WriteAhead took the outer step's mark for its own call's because the
// request pointer was the same, and the inner handler wrote for real, with
// no intent record and an outcome record saying dry_run true. A
// WriteAhead inside the same Audit middleware as the step that answered
// the dry run still passes it on to the aware handler.
func TestReview22bWriteAheadDryRunReentered(t *testing.T) {
	p := stepPolicy(t)
	sink := &memSink{}
	o := &mcpguard.Options{Logger: quiet}
	var s stub
	inner := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p),
		must(t)(mcpguard.WriteAhead(sink, p, o)))(s.handle)
	// The router: aware, it sends every call, dry run or not, to the
	// backend's chain, which answers dry runs (WriteAhead's doc).
	route := func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return inner(ctx, r)
	}
	aware := &mcpguard.Options{Logger: quiet, Audit: sink, Confirmer: testSigner(t, nil), Tools: map[string]mcpguard.ToolOptions{"add_note": {DryRunAware: true}}}
	g, err := mcpguard.New(p, fixed(bob), aware)
	if err != nil {
		t.Fatal(err)
	}
	gh, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, route)
	if err != nil {
		t.Fatal(err)
	}
	outer := map[string]mcp.ToolHandler{
		"guard": gh,
		"dryrun_step": mcpguard.Chain(mustAudit(t, sink, aware), mcpguard.Authenticate(fixed(bob)),
			must(t)(mcpguard.DryRun(p, aware)))(route),
		"limit_step": mcpguard.Chain(mustAudit(t, sink, aware), mcpguard.Authenticate(fixed(bob)),
			must(t)(mcpguard.Limit(dsSpendLimiter(t, nil, nil), p, aware)))(route),
	}
	for name, h := range outer {
		t.Run(name, func(t *testing.T) {
			s.ran = 0
			res, err := h(context.Background(), dryReq("add_note", `{"title":"t"}`))
			if got := codeOf(t, res, err); got != "" || s.ran != 0 {
				t.Fatalf("dry run through the router: %q, the backend's handler ran %d time(s) for real, want 0: %s", got, s.ran, mustJSON(res))
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["dry_run"] != true {
				t.Errorf("dry run answered %s, want the backend chain's simulated result", mustJSON(res))
			}
		})
	}

	// In one Audit middleware, a WriteAhead given no tool options still
	// passes on the dry run a DryRun step answered for an aware handler.
	previews := 0
	h := mcpguard.Chain(mustAudit(t, sink, aware), mcpguard.Authenticate(fixed(bob)), must(t)(mcpguard.DryRun(p, aware)),
		must(t)(mcpguard.WriteAhead(sink, p, o)))(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !dryrun.FromContext(ctx) {
			t.Error("the aware handler ran for real")
		}
		previews++
		return textResult("would note"), nil
	})
	res, err := h(context.Background(), dryReq("add_note", `{"title":"t"}`))
	if got := codeOf(t, res, err); got != "" || previews != 1 {
		t.Errorf("aware dry run in one chain: %q, previews %d, want the handler's answer: %s", got, previews, mustJSON(res))
	}
}

// TestReview22bFoldedCostEitherFails: a name that equals a tool's only
// under case folding, with Cost functions of its own and of that tool,
// costs the larger of the two, and fails when either fails (Options.Tools
// and toolOptions say so): a cost that is not a finite number at least zero
// fails as an error does. Before, max(-1, 1) hid the tool's failed cost,
// and "PAY" ran where "pay" with the same arguments is refused.
func TestReview22bFoldedCostEitherFails(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write}},
		Default:        &policy.ToolRule{Class: policy.Read},
		WriteAllowlist: []string{"pay", "PAY"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// pay's price lookup fails for an unknown item with -1.
	price := func(args map[string]any) (float64, error) {
		if args["item"] == "known" {
			return 3, nil
		}
		return -1, nil
	}
	one := func(map[string]any) (float64, error) { return 1, nil }
	for _, bad := range []float64{-1, math.Inf(-1)} {
		tools := map[string]mcpguard.ToolOptions{
			"pay": {Cost: func(args map[string]any) (float64, error) {
				if c, _ := price(args); c < 0 {
					return bad, nil
				}
				return price(args)
			}},
			"PAY": {Cost: one},
		}
		opts := &mcpguard.Options{Logger: quiet, NoWriteAhead: true, Limiter: dsSpendLimiter(t, nil, nil), Tools: tools}
		g, err := mcpguard.New(p, fixed(bob), opts)
		if err != nil {
			t.Fatal(err)
		}
		var s stub
		schema := json.RawMessage(`{"type":"object"}`)
		gp, err := g.Wrap(&mcp.Tool{Name: "PAY", InputSchema: schema}, s.handle)
		if err != nil {
			t.Fatal(err)
		}
		lim := must(t)(mcpguard.Limit(dsSpendLimiter(t, nil, nil), p, opts))
		for name, h := range map[string]mcp.ToolHandler{"guard": gp, "limit_step": mcpguard.Authenticate(fixed(bob))(lim(s.handle))} {
			s.ran = 0
			res, err := h(context.Background(), req("PAY", `{"item":"unknown"}`))
			if got := codeOf(t, res, err); got != "INTERNAL" || s.ran != 0 {
				t.Errorf("%s: PAY with pay's cost %v: %q, ran %d; want INTERNAL (the cost could not be computed), not run: %s", name, bad, got, s.ran, mustJSON(res))
			}
			res, err = h(context.Background(), req("PAY", `{"item":"known"}`))
			if got := codeOf(t, res, err); got != "" || s.ran != 1 {
				t.Errorf("%s: PAY of a known item: %q, ran %d; want it run: %s", name, got, s.ran, mustJSON(res))
			}
		}
	}
}

// TestReview22bAuditCopiesRecordArgs: the Audit middleware, as New and the
// other steps do (Options doc), takes its own copy of each tool's
// RecordArgs: a caller that reuses or changes the slice later changes
// nothing it records. Before, Audit copied the Tools map but kept the
// caller's slices, and recorded the fields written there afterwards (with
// a data race against calls in flight).
func TestReview22bAuditCopiesRecordArgs(t *testing.T) {
	p := stepPolicy(t)
	in, err := mcpguard.NewValidator(noteSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"title"}
	sink := &memSink{}
	o := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{"add_note": {RecordArgs: fields}}}
	var s stub
	h := mcpguard.Chain(mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p),
		mcpguard.ValidateArguments(in))(s.handle)
	fields[0] = "amount" // reused by the caller after Audit was made
	res, err := h(context.Background(), req("add_note", `{"title":"t","amount":12}`))
	if got := codeOf(t, res, err); got != "" {
		t.Fatalf("add_note: %q: %s", got, mustJSON(res))
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d records, want 1", len(evs))
	}
	if got := mustJSON(evs[0].Args); got != `{"title":"t"}` {
		t.Errorf("recorded args %s, want the fields given when Audit was made: {\"title\":\"t\"}", got)
	}
}

// TestReview22bFoldedCostNotBelowDefault: a name that equals a tool's only
// under case folding is that tool at a lenient server and, at a strict one,
// another tool the default rule governs; policy.Resolve gives it the larger
// cost of the two rules, and with Cost functions it costs the larger of the
// two tools' costs, each its Cost function's or else its rule's. Before,
// the tool's Cost function replaced the combined rule's cost: "SEARCH"
// cost 1 (search's function) where an unknown tool costs 4 (the default
// rule), and "PAY" with a Cost function of its own cost what that said,
// under pay's rule cost.
func TestReview22bFoldedCostNotBelowDefault(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "search", Class: policy.Read}, {Name: "pay", Class: policy.Write, Cost: 4}},
		Default:        &policy.ToolRule{Class: policy.Read, Cost: 4},
		WriteAllowlist: []string{"pay", "PAY"},
	})
	if err != nil {
		t.Fatal(err)
	}
	one := func(map[string]any) (float64, error) { return 1, nil }
	tools := map[string]mcpguard.ToolOptions{"search": {Cost: one}, "PAY": {Cost: one}}
	for _, name := range []string{"SEARCH", "PAY"} {
		opts := &mcpguard.Options{Logger: quiet, NoWriteAhead: true, Limiter: dsSpendLimiter(t, nil, nil), Tools: tools}
		g, err := mcpguard.New(p, fixed(bob), opts)
		if err != nil {
			t.Fatal(err)
		}
		var s stub
		gh, err := g.Wrap(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
		if err != nil {
			t.Fatal(err)
		}
		lim := must(t)(mcpguard.Limit(dsSpendLimiter(t, nil, nil), p, opts))
		for how, h := range map[string]mcp.ToolHandler{"guard": gh, "limit_step": mcpguard.Authenticate(fixed(bob))(lim(s.handle))} {
			// Cost 4 each under a cap of 10: the third is refused.
			for i := range 3 {
				res, err := h(context.Background(), req(name, `{}`))
				want := ""
				if i == 2 {
					want = "SPEND_LIMIT_EXCEEDED"
				}
				if got := codeOf(t, res, err); got != want {
					t.Errorf("%s %s call %d: %q, want %q (a cost of 4): %s", how, name, i+1, got, want, mustJSON(res))
				}
			}
		}
	}
}

// r22bPerms returns every ordering of every non-empty subset of items.
func r22bPerms(items []string) [][]string {
	var out [][]string
	var rec func(cur []string, used map[string]bool)
	rec = func(cur []string, used map[string]bool) {
		if len(cur) > 0 {
			out = append(out, append([]string(nil), cur...))
		}
		for _, it := range items {
			if !used[it] {
				used[it] = true
				rec(append(cur, it), used)
				used[it] = false
			}
		}
	}
	rec(nil, map[string]bool{})
	return out
}

// r22bCount returns how many calls of bob l counts now ("0", "1", "2+"
// under its rate of 2), or "leak" when a slot of its in-flight cap of 1
// is still held.
func r22bCount(l *limiter.Limiter) string {
	ctx := context.Background()
	r := limiter.Request{User: "bob", Tool: "probe", Calls: 1}
	d1 := l.AllowAt(ctx, time.Now(), r)
	if !d1.Allowed {
		if d1.Limit.Kind == limiter.Concurrency {
			return "leak"
		}
		return "2+"
	}
	l.Release(d1)
	d2 := l.AllowAt(ctx, time.Now(), r)
	if d2.Allowed {
		l.Release(d2)
		return "0"
	}
	if d2.Limit.Kind == limiter.Concurrency {
		return "?"
	}
	return "1"
}

// TestReview22bStepOrders runs a dry run, a real call and a real call
// whose write-ahead intent fails through Audit, Authenticate, Authorize
// and every ordering of every subset of Confirm, Limit, DryRun and
// WriteAhead, with Confirm given no limiter, Limit's or another, for a
// write that needs confirming and one that does not, aware of dry runs or
// not. Each dry run is answered without a real write (the handler runs,
// with a dry-run context, only when aware) and gets no intent; every call
// gets one outcome record with the right dry_run flag; each limiter counts
// the call once if a step of it ran, never twice, and a refused call not
// at all; no in-flight slot is left held.
func TestReview22bStepOrders(t *testing.T) {
	p := stepPolicy(t)
	newLim := func() *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour},
			{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	fails := 0
	for _, order := range r22bPerms([]string{"C", "L", "D", "W"}) {
		for _, lims := range []string{"none", "shared", "two"} {
			for _, tool := range []string{"add_note", "wipe"} {
				for _, aware := range []bool{false, true} {
					for _, mode := range []string{"dry", "real", "realfail"} {
						dry := mode == "dry"
						if !dry && tool == "wipe" {
							continue
						}
						wsink := &memSink{}
						if mode == "realfail" {
							wsink.fail.Store(true)
						}
						l1, l2 := newLim(), newLim()
						sink := &memSink{}
						o := &mcpguard.Options{Logger: quiet, Tools: map[string]mcpguard.ToolOptions{tool: {DryRunAware: aware}}}
						co := *o
						switch lims {
						case "shared":
							co.Limiter = l1
						case "two":
							co.Limiter = l2
						}
						steps := []mcpguard.Middleware{mustAudit(t, sink, o), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(p)}
						for _, s := range order {
							switch s {
							case "C":
								steps = append(steps, must(t)(mcpguard.Confirm(testSigner(t, nil), p, &co)))
							case "L":
								steps = append(steps, must(t)(mcpguard.Limit(l1, p, o)))
							case "D":
								steps = append(steps, must(t)(mcpguard.DryRun(p, o)))
							case "W":
								steps = append(steps, must(t)(mcpguard.WriteAhead(wsink, p, o)))
							}
						}
						wrote, previews := 0, 0
						h := mcpguard.Chain(steps...)(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
							if dryrun.FromContext(ctx) {
								previews++
							} else {
								wrote++
							}
							return textResult("x"), nil
						})
						r := req(tool, `{"title":"t"}`)
						if dry {
							r = dryReq(tool, `{"title":"t"}`)
						}
						res, err := h(context.Background(), r)
						code := codeOf(t, res, err)
						var probs []string
						if dry && wrote != 0 {
							probs = append(probs, "REAL WRITE")
						}
						if dry && previews != map[bool]int{false: 0, true: 1}[aware] {
							probs = append(probs, fmt.Sprintf("%d previews", previews))
						}
						hasW := strings.Contains(strings.Join(order, ""), "W")
						wantCode := ""
						if mode == "realfail" && hasW {
							wantCode = "AUDIT_UNAVAILABLE"
						}
						if code != wantCode {
							probs = append(probs, "code "+code)
						}
						if !dry && wrote != map[bool]int{false: 1, true: 0}[wantCode != ""] {
							probs = append(probs, fmt.Sprintf("wrote %d time(s)", wrote))
						}
						var outs, intents int
						for _, e := range sink.all() {
							if e.Phase == audit.PhaseOutcome {
								outs++
								if e.DryRun != dry {
									probs = append(probs, fmt.Sprintf("dry_run=%v", e.DryRun))
								}
							} else {
								intents++
							}
						}
						if outs != 1 {
							probs = append(probs, fmt.Sprintf("outcomes=%d", outs))
						}
						if dry && intents != 0 {
							probs = append(probs, "intent for dry run")
						}
						c1, c2 := r22bCount(l1), r22bCount(l2)
						// Each limiter counts the call once if a step of it
						// ran: all of them, except in a dry run of a tool not
						// aware of dry runs, which the outermost step answers.
						want1, want2 := "0", "0"
						reach := func(i int) bool {
							if !dry || aware {
								return true
							}
							return i == 0
						}
						for i, s := range order {
							if !reach(i) {
								continue
							}
							if s == "L" {
								want1 = "1"
							}
							if s == "C" && (dry || tool == "wipe") {
								switch lims {
								case "shared":
									want1 = "1"
								case "two":
									want2 = "1"
								}
							}
						}
						if wantCode != "" {
							want1, want2 = "0", "0"
						}
						if c1 != want1 || c2 != want2 {
							probs = append(probs, fmt.Sprintf("counts l1=%s l2=%s want %s %s", c1, c2, want1, want2))
						}
						if len(probs) > 0 {
							fails++
							if fails < 60 {
								t.Errorf("%v lims=%s %s aware=%v %s: %v", order, lims, tool, aware, mode, probs)
							}
						}
					}
				}
			}
		}
	}
}
