package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r29p is a server with a guard installed, for SetPolicy's tests: "look"
// (annotated read-only), "put" (no annotations), "flex" (no annotations,
// an output schema the simulated dry-run result does not fit) and "spare".
type r29p struct {
	srv  *mcp.Server
	g    *mcpguard.Guard
	sink *memSink
	ran  atomic.Int64  // handler runs
	gate chan struct{} // when not nil, "look" waits for it
	in   chan struct{} // "look" tells it started
}

// r29pRules are the rules of the r29p tools; more are appended per test.
func r29pRules(extra ...policy.ToolRule) []policy.ToolRule {
	base := []policy.ToolRule{
		{Name: "look", Class: policy.Read},
		{Name: "put", Class: policy.Write},
		{Name: "flex", Class: policy.Read},
		{Name: "spare", Class: policy.Read},
	}
	for _, r := range extra {
		base = slices.DeleteFunc(base, func(b policy.ToolRule) bool { return b.Name == r.Name })
		base = append(base, r)
	}
	return base
}

func r29pPolicy(t *testing.T, cfg policy.Config) *policy.Policy {
	t.Helper()
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newR29p(t *testing.T, p *policy.Policy, opts *mcpguard.Options) *r29p {
	t.Helper()
	h := &r29p{sink: &memSink{}, in: make(chan struct{}, 16)}
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "r29p", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	h.srv.AddTool(&mcp.Tool{Name: "look", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.ran.Add(1)
			if h.gate != nil {
				h.in <- struct{}{}
				<-h.gate
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "seen"}}}, nil
		})
	for _, n := range []string{"put", "spare"} {
		h.srv.AddTool(&mcp.Tool{Name: n, InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.ran.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	}
	out := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}}
	h.srv.AddTool(&mcp.Tool{Name: "flex", InputSchema: obj, OutputSchema: out}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h.ran.Add(1)
		return &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}, Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}}, nil
	})
	o := mcpguard.Options{}
	if opts != nil {
		o = *opts
	}
	o.Audit, o.Logger = h.sink, quiet
	var err error
	if h.g, err = mcpguard.New(p, fixed(bob), &o); err != nil {
		t.Fatal(err)
	}
	if err := h.g.Install(h.srv); err != nil {
		t.Fatal(err)
	}
	return h
}

func r29pNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestReview29SetPolicyRevokes: a call allowed under the policy is refused
// once SetPolicy hides its tool, exactly as an unknown tool is, and the
// tool is gone from tools/list; a write taken off the allowlist is
// WRITE_NOT_ALLOWED. The guard had no way to change its policy.
func TestReview29SetPolicyRevokes(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			old := r29pPolicy(t, policy.Config{Tools: r29pRules(), WriteAllowlist: []string{"put"}})
			h := newR29p(t, old, &mcpguard.Options{NoWriteAhead: true})
			cs := connectVersion(t, h.srv, nil, v)
			for _, n := range []string{"look", "put"} {
				if res, err := call(t, cs, n, map[string]any{}); codeOf(t, res, err) != "" {
					t.Fatalf("%s before SetPolicy: %s", n, codeOf(t, res, err))
				}
			}
			if got, want := r29pNames(t, cs), []string{"flex", "look", "put", "spare"}; !slices.Equal(got, want) {
				t.Fatalf("tools/list before = %v, want %v", got, want)
			}
			next := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "look", Class: policy.Read, Roles: []string{"incident"}})})
			if err := h.g.SetPolicy(next); err != nil {
				t.Fatal(err)
			}
			if h.g.Policy() != next {
				t.Error("Policy() is not the policy set")
			}
			_, err := call(t, cs, "look", map[string]any{})
			_, unknownErr := call(t, cs, "nope", map[string]any{})
			if got, want := codeOf(t, nil, err), strings.ReplaceAll(codeOf(t, nil, unknownErr), "nope", "look"); got != want {
				t.Errorf("hidden look after SetPolicy: %s, want %s (as an unknown tool)", got, want)
			}
			if res, err := call(t, cs, "put", map[string]any{}); codeOf(t, res, err) != "WRITE_NOT_ALLOWED" {
				t.Errorf("put after SetPolicy: %s, want WRITE_NOT_ALLOWED", codeOf(t, res, err))
			}
			if got, want := r29pNames(t, cs), []string{"flex", "put", "spare"}; !slices.Equal(got, want) {
				t.Errorf("tools/list after = %v, want %v", got, want)
			}
			if n := h.ran.Load(); n != 2 {
				t.Errorf("handlers ran %d times, want 2 (before SetPolicy only)", n)
			}
		})
	}
}

// TestReview29SetPolicyCallUnderWay: a call under way when SetPolicy hides
// its tool finishes as it was allowed, and its record says so.
func TestReview29SetPolicyCallUnderWay(t *testing.T) {
	old := r29pPolicy(t, policy.Config{Tools: r29pRules()})
	h := newR29p(t, old, nil)
	h.gate = make(chan struct{})
	cs := connectVersion(t, h.srv, nil, "")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "look", Arguments: map[string]any{}})
		done <- answer{res, err}
	}()
	<-h.in
	hide := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "look", Class: policy.Read, Roles: []string{"incident"}})})
	if err := h.g.SetPolicy(hide); err != nil {
		t.Fatal(err)
	}
	close(h.gate)
	a := <-done
	if got := codeOf(t, a.res, a.err); got != "" {
		t.Fatalf("the call under way: %s, want it to finish as allowed", got)
	}
	if err := h.g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := eventsFor(h.sink.all(), "look")
	if len(evs) != 1 || !evs[0].Allowed || evs[0].Class != "read" {
		t.Errorf("records %+v, want one allowed read", evs)
	}
	if res, err := call(t, cs, "look", map[string]any{}); err == nil {
		t.Errorf("a new call after SetPolicy: %s, want it refused", mustJSON(res))
	}
}

// TestReview29SetPolicyStaleConfirmation: a confirmation issued under the
// old policy, for a tool the new one forbids, is refused and runs nothing.
func TestReview29SetPolicyStaleConfirmation(t *testing.T) {
	signer := testSigner(t, nil)
	confirmPut := policy.ToolRule{Name: "put", Class: policy.Write, Confirm: true}
	old := r29pPolicy(t, policy.Config{Tools: r29pRules(confirmPut), WriteAllowlist: []string{"put"}})
	h := newR29p(t, old, &mcpguard.Options{Confirmer: signer, NoWriteAhead: true})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "r29p", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: elicitCaps()})
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	args := json.RawMessage(`{}`)
	ask, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "put", Arguments: args})
	if err != nil || !ask.NeedsInput() || ask.RequestState == "" {
		t.Fatalf("first round: %v %s, want a confirmation request", err, mustJSON(ask))
	}
	next := r29pPolicy(t, policy.Config{Tools: r29pRules(confirmPut)}) // put off the allowlist
	if err := h.g.SetPolicy(next); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "put", Arguments: args, RequestState: ask.RequestState,
		InputResponses: mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}},
	})
	if got := codeOf(t, res, err); got != "WRITE_NOT_ALLOWED" {
		t.Errorf("confirmed round after SetPolicy: %s, want WRITE_NOT_ALLOWED", got)
	}
	if n := h.ran.Load(); n != 0 {
		t.Errorf("the write ran %d times", n)
	}
}

// TestReview29SetPolicyRefusals: every policy New or Install would refuse
// with the guard's Options and tools is refused by SetPolicy, and the
// guard keeps the policy it has, and serves by it.
func TestReview29SetPolicyRefusals(t *testing.T) {
	spend := limiter.Limit{Kind: limiter.Spend, Scope: limiter.User, Tool: "spare", Max: 3, Window: time.Hour}
	lim, err := limiter.New([]limiter.Limit{spend}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := func() *mcpguard.Options {
		return &mcpguard.Options{
			Tools:   map[string]mcpguard.ToolOptions{"put": {DryRun: true}},
			Limiter: lim,
		}
	}
	spare := policy.ToolRule{Name: "spare", Class: policy.Read, Cost: 1}
	putW := policy.ToolRule{Name: "put", Class: policy.Write}
	without := func(name string) []policy.ToolRule {
		return slices.DeleteFunc(r29pRules(spare, putW), func(r policy.ToolRule) bool { return r.Name == name })
	}
	tests := []struct {
		name string
		cfg  *policy.Config // nil: a nil policy
		want string
	}{
		{"nil", nil, "nil policy"},
		{"options_tool_without_rule", &policy.Config{Tools: append(without("put"), policy.ToolRule{Name: "other", Class: policy.Read})}, `"put"`},
		{"dryrun_on_read", &policy.Config{Tools: r29pRules(spare, policy.ToolRule{Name: "put", Class: policy.Read})}, "DryRun"},
		{"limit_tool_without_rule", &policy.Config{Tools: without("spare")}, `"spare"`},
		{"limit_below_cost", &policy.Config{Tools: r29pRules(putW, policy.ToolRule{Name: "spare", Class: policy.Read, Cost: 5})}, "costs 5"},
		{"limit_caps_nothing", &policy.Config{Tools: r29pRules(putW, policy.ToolRule{Name: "spare", Class: policy.Read})}, "costs nothing"},
		{"confirm_without_confirmer", &policy.Config{Tools: r29pRules(spare, policy.ToolRule{Name: "put", Class: policy.Write, Confirm: true})}, "Confirmer"},
		{"default_confirm_without_confirmer", &policy.Config{Tools: r29pRules(spare, putW), Default: &policy.ToolRule{Class: policy.Read, Confirm: true}}, "default rule"},
		{"served_tool_without_rule", &policy.Config{Tools: without("flex")}, `"flex"`},
		{"hint_contradicts_class", &policy.Config{Tools: r29pRules(spare, putW, policy.ToolRule{Name: "look", Class: policy.Write})}, `"look"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := r29pPolicy(t, policy.Config{Tools: r29pRules(spare, putW)})
			h := newR29p(t, old, opts())
			var p *policy.Policy
			if tt.cfg != nil {
				p = r29pPolicy(t, *tt.cfg)
			}
			err := h.g.SetPolicy(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SetPolicy: %v, want an error saying %s", err, tt.want)
			}
			if h.g.Policy() != old {
				t.Error("the refused policy replaced the guard's")
			}
			cs := connectVersion(t, h.srv, nil, "")
			if res, err := call(t, cs, "look", map[string]any{}); codeOf(t, res, err) != "" {
				t.Errorf("look after a refused SetPolicy: %s", codeOf(t, res, err))
			}
			// New refuses the same policy.
			if tt.cfg != nil {
				if _, err := mcpguard.New(p, fixed(bob), opts()); err == nil && !strings.Contains(tt.name, "served") && !strings.Contains(tt.name, "hint") {
					t.Errorf("New accepts the policy SetPolicy refused")
				}
			}
		})
	}
}

// TestReview29SetPolicyHeaderBinding: a served tool that binds an
// argument to an HTTP header may not become hidden from some caller.
func TestReview29SetPolicyHeaderBinding(t *testing.T) {
	old := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "hdr", Class: policy.Read})})
	g, err := mcpguard.New(old, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	srv.AddTool(&mcp.Tool{Name: "hdr", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hide := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "hdr", Class: policy.Read, Roles: []string{"admin"}})})
	if err := g.SetPolicy(hide); err == nil || !strings.Contains(err.Error(), "x-mcp-header") {
		t.Errorf("SetPolicy hiding a tool that binds headers: %v, want refused", err)
	}
	if g.Policy() != old {
		t.Error("the refused policy replaced the guard's")
	}
}

// TestReview29SetPolicyWrapped: a tool guarded with Wrap is checked
// against a new policy too: one without its rule is refused.
func TestReview29SetPolicyWrapped(t *testing.T) {
	old := r29pPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "w", Class: policy.Read}, {Name: "z", Class: policy.Read}}})
	g, err := mcpguard.New(old, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "w", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetPolicy(r29pPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "z", Class: policy.Read}}})); err == nil {
		t.Error("SetPolicy took a policy without a rule for a tool Wrap guards")
	}
	if res, err := h(context.Background(), req("w", `{}`)); codeOf(t, res, err) != "" {
		t.Errorf("w: %s", codeOf(t, res, err))
	}
	// Once the wrapped handler is gone, its tool no longer holds the policy.
	h = nil
	ok := false
	for range 50 {
		runtime.GC()
		if g.SetPolicy(r29pPolicy(t, policy.Config{Tools: []policy.ToolRule{{Name: "z", Class: policy.Read}}})) == nil {
			ok = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !ok {
		t.Error("SetPolicy still refused after the wrapped handler was collected")
	}
}

// TestReview29SetPolicyDryRunShape: a tool with an output schema the
// simulated dry-run result does not fit, a read under the first policy
// and a write under the next, gets its dry runs' simulated result as a
// tool error: what the guard derived from the first policy (nothing: reads
// have no dry runs) must not decide it.
func TestReview29SetPolicyDryRunShape(t *testing.T) {
	old := r29pPolicy(t, policy.Config{Tools: r29pRules()})
	h := newR29p(t, old, &mcpguard.Options{NoWriteAhead: true})
	next := r29pPolicy(t, policy.Config{Tools: r29pRules(policy.ToolRule{Name: "flex", Class: policy.Write}), WriteAllowlist: []string{"flex"}})
	if err := h.g.SetPolicy(next); err != nil {
		t.Fatal(err)
	}
	cs := connectVersion(t, h.srv, nil, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "flex", Arguments: map[string]any{}, Meta: mcp.Meta{dryrun.MetaKey: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("simulated dry run of a write whose output schema refuses it: %s, want a tool error", mustJSON(res))
	}
	if n := h.ran.Load(); n != 0 {
		t.Errorf("the handler ran %d times for a dry run", n)
	}
}

// TestReview29SetPolicyRace flips between two policies while calls and
// listings run: each answer is one that a single policy gives. Under A,
// "look" is listed and "spare" hidden, "put" is a read; under B the
// reverse, and "put" is a write not on the allowlist.
func TestReview29SetPolicyRace(t *testing.T) {
	a := r29pPolicy(t, policy.Config{Tools: r29pRules(
		policy.ToolRule{Name: "spare", Class: policy.Read, Roles: []string{"x"}},
		policy.ToolRule{Name: "put", Class: policy.Read})})
	b := r29pPolicy(t, policy.Config{Tools: r29pRules(
		policy.ToolRule{Name: "look", Class: policy.Read, Roles: []string{"x"}},
		policy.ToolRule{Name: "put", Class: policy.Write})})
	h := newR29p(t, a, nil)
	listA, listB := []string{"flex", "look", "put"}, []string{"flex", "put", "spare"}
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := a
			if i%2 == 1 {
				p = b
			}
			if err := h.g.SetPolicy(p); err != nil {
				t.Error(err)
				return
			}
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 4 {
		cs := connectVersion(t, h.srv, nil, "")
		wg.Go(func() {
			for range 60 {
				if w%2 == 0 {
					got := r29pNames(t, cs)
					if !slices.Equal(got, listA) && !slices.Equal(got, listB) {
						errs <- fmt.Sprintf("tools/list %v is neither policy's", got)
					}
					continue
				}
				res, err := call(t, cs, "put", map[string]any{})
				if c := codeOf(t, res, err); c != "" && c != "WRITE_NOT_ALLOWED" {
					errs <- "put: " + c
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	flips.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, ev := range eventsFor(h.sink.all(), "put") {
		if ok := (ev.Class == "read" && ev.Allowed) || (ev.Class == "write" && !ev.Allowed && ev.Code == "WRITE_NOT_ALLOWED"); !ok {
			t.Errorf("record of put: class %q allowed %v code %q: no policy decides so", ev.Class, ev.Allowed, ev.Code)
		}
	}
}
