package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Composite tools: "refund_and_notify" (a write) serves its call by
// calling the guarded write "trigger_refund" in-process, with the context
// it was given; "lookup_and_refund" is a read that does the same.
var nestRules = []policy.ToolRule{
	{Name: "refund_and_notify", Class: policy.Write},
	{Name: "lookup_and_refund", Class: policy.Read},
	{Name: "trigger_refund", Class: policy.Write},
}

var nestWrites = []string{"refund_and_notify", "trigger_refund"}

func nestPolicy(t *testing.T) *policy.Policy {
	return r30Policy(t, policy.Config{Tools: nestRules, WriteAllowlist: nestWrites})
}

// nestInnerCall calls the guarded handler inner for tool name with args,
// on outer's session, as a composite tool's handler does.
func nestInnerCall(ctx context.Context, inner mcp.ToolHandler, outer *mcp.CallToolRequest, name, args string) (*mcp.CallToolResult, error) {
	return inner(ctx, &mcp.CallToolRequest{Session: outer.Session, Extra: outer.Extra,
		Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}})
}

// TestReview30NestedCancelEndsInnerQuestion: the write "refund_and_notify"
// calls the guarded write "trigger_refund" in-process with its context,
// and "trigger_refund" asks the client (an older one, which is asked
// within the call). The caller cancels the call while the human looks at
// the question. The question must end with the call, as it does when
// "trigger_refund" is called directly: both writes run to completion, but
// nothing waits on a caller that is gone. Before, the inner write looked
// only at its own caller, the outer write's context (which, a write's, is
// never cancelled): the question waited until the client went away, and
// the call held its in-flight places and Wait all along. So whether the
// inner tool is of the same guard or another's, and whether the outer
// tool is added by AddTool or guarded by Install; and for a read outer
// call too, whose context the caller cancels directly.
func TestReview30NestedCancelEndsInnerQuestion(t *testing.T) {
	for _, outerTool := range []string{"refund_and_notify", "lookup_and_refund"} {
		for _, mode := range []string{"addtool", "install", "addtool_second_guard", "install_second_guard"} {
			t.Run(outerTool+"/"+mode, func(t *testing.T) {
				sink := &memSink{}
				g := r2Guard(t, nestPolicy(t), sink)
				gi := g
				if strings.HasSuffix(mode, "second_guard") {
					gi = r2Guard(t, nestPolicy(t), sink)
				}
				obj := map[string]any{"type": "object"}
				asked := make(chan struct{}, 1)
				var innerErr atomic.Value
				inner, err := gi.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
					func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						_, err := req.Session.Elicit(ctx, r30Form("notify the customer?"))
						innerErr.Store(fmt.Sprint(err))
						if err != nil {
							return nil, err
						}
						return textResult("refund R-1 made"), nil
					})
				if err != nil {
					t.Fatal(err)
				}
				outer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
				}
				tool := &mcp.Tool{Name: outerTool, InputSchema: obj}
				if outerTool == "lookup_and_refund" {
					tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
				}
				srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
				if strings.HasPrefix(mode, "install") {
					srv.AddTool(tool, outer)
					if err := g.Install(srv); err != nil {
						t.Fatal(err)
					}
				} else if err := g.AddTool(srv, tool, outer); err != nil {
					t.Fatal(err)
				}
				var endedByCancel atomic.Bool
				cs := connectVersion(t, srv, &mcp.ClientOptions{
					ElicitationHandler: func(ectx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked <- struct{}{}
						select {
						case <-ectx.Done():
							endedByCancel.Store(true)
							return nil, ectx.Err()
						case <-time.After(5 * time.Second):
							return &mcp.ElicitResult{Action: "decline"}, nil
						}
					},
				}, "2025-11-25")
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					<-asked
					cancel()
				}()
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: outerTool, Arguments: map[string]any{}}); err == nil {
					t.Fatal("cancelled call: no error")
				}
				wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer wcancel()
				if err := g.Wait(wctx); err != nil {
					t.Fatalf("the call did not end within 3s of its cancellation: the inner write's question still waits on the client (Wait: %v)", err)
				}
				if err := gi.Wait(wctx); err != nil {
					t.Fatalf("inner guard: %v", err)
				}
				// The client learns of the cancellation by a notification
				// that may come after the server's side has ended.
				for deadline := time.Now().Add(3 * time.Second); !endedByCancel.Load() && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				if !endedByCancel.Load() {
					t.Errorf("the inner question was not cancelled within 3 s")
				}
				if s, _ := innerErr.Load().(string); !strings.Contains(s, "context canceled") {
					t.Errorf("the inner question returned %q, want it cancelled", s)
				}
				// The inner write failed for its client's going away, and
				// its record says so, not that the tool failed.
				var details []string
				outs := 0
				for _, e := range sink.all() {
					if e.Tool == "trigger_refund" && e.Phase == audit.PhaseOutcome {
						details = append(details, e.Detail)
					}
					if e.Tool == outerTool && e.Phase == audit.PhaseOutcome {
						outs++
					}
				}
				if outs != 1 {
					t.Errorf("the outer call has %d outcome records, want 1", outs)
				}
				if len(details) != 1 || !strings.Contains(details[0], "the client went away") {
					t.Errorf("the inner write's outcome records: %q, want one saying the client went away", details)
				}
			})
		}
	}
}

// TestReview30NestedCancelEndsInnerConfirmation: the write
// "refund_and_notify" calls "trigger_refund", a write that needs a
// confirmation, in-process with its context; an older client's human is
// asked to confirm within the call, and the caller cancels. The guard's
// own question must end with the call, whether or not a sending
// middleware of a guard sees it: here the outer write is guarded by Wrap
// and added with the server's own AddTool, as the package doc shows. Before,
// the question waited for the confirmation's expiry (two minutes by
// default), holding the call's in-flight places.
func TestReview30NestedCancelEndsInnerConfirmation(t *testing.T) {
	rules := append([]policy.ToolRule(nil), nestRules...)
	rules[2].Confirm = true
	p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: nestWrites})
	for _, mode := range []string{"wrap", "addtool"} {
		t.Run(mode, func(t *testing.T) {
			g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: &memSink{}, Logger: quiet, Confirmer: testSigner(t, nil)})
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"type": "object"}
			var refunds atomic.Int64
			inner, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					refunds.Add(1)
					return textResult("refund R-1 made"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			outer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
			}
			tool := &mcp.Tool{Name: "refund_and_notify", InputSchema: obj}
			srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
			if mode == "wrap" {
				wh, err := g.Wrap(tool, outer)
				if err != nil {
					t.Fatal(err)
				}
				srv.AddTool(tool, wh)
			} else if err := g.AddTool(srv, tool, outer); err != nil {
				t.Fatal(err)
			}
			asked := make(chan struct{}, 1)
			cs := connectVersion(t, srv, &mcp.ClientOptions{
				ElicitationHandler: func(ectx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- struct{}{}
					select {
					case <-ectx.Done():
						return nil, ectx.Err()
					case <-time.After(5 * time.Second):
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
				},
			}, "2025-11-25")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-asked
				cancel()
			}()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund_and_notify", Arguments: map[string]any{}}); err == nil {
				t.Fatal("cancelled call: no error")
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer wcancel()
			if err := g.Wait(wctx); err != nil {
				t.Fatalf("the call did not end within 3s of its cancellation: the inner confirmation still waits on the client (Wait: %v)", err)
			}
			if n := refunds.Load(); n != 0 {
				t.Errorf("the unconfirmed refund ran %d times", n)
			}
		})
	}
}

// nest is a server of composite tools guarded by one Guard (or, with
// second, the inner tools by a second Guard on the same audit sink and
// limiter): "refund_and_notify" (write) and "lookup_and_refund" (read)
// each call the guarded handler of the tool named in their argument
// "inner" in-process, with their own context and session, and answer
// with what it answered. "trigger_refund" (write, cost 5) counts its
// refunds and answers with its caller's subject; "admin_refund" (write)
// needs the admin role; "panicky" (read) panics.
type nest struct {
	srv     *mcp.Server
	g, gi   *mcpguard.Guard
	auth    *sessionAuth
	sink    *memSink
	refunds atomic.Int64
	inner   map[string]mcp.ToolHandler
	// recover makes the outer handlers answer a result of their own when
	// the inner call fails.
	recover bool
}

var nestAllRules = []policy.ToolRule{
	{Name: "refund_and_notify", Class: policy.Write},
	{Name: "lookup_and_refund", Class: policy.Read},
	{Name: "trigger_refund", Class: policy.Write, Cost: 5},
	{Name: "admin_refund", Class: policy.Write},
	{Name: "panicky", Class: policy.Read},
}

func nestAllPolicy(t *testing.T, mut func(*policy.Config)) *policy.Policy {
	cfg := policy.Config{
		Tools:          append([]policy.ToolRule(nil), nestAllRules...),
		RoleRules:      []policy.RoleRule{{Pattern: "admin_*", Roles: []string{"admin"}}},
		WriteAllowlist: []string{"refund_and_notify", "trigger_refund", "admin_refund"},
	}
	if mut != nil {
		mut(&cfg)
	}
	return r30Policy(t, cfg)
}

func newNest(t *testing.T, p *policy.Policy, opts mcpguard.Options, second bool) *nest {
	t.Helper()
	n := &nest{sink: &memSink{}, auth: &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, inner: map[string]mcp.ToolHandler{}}
	opts.Audit, opts.Logger = n.sink, quiet
	if opts.Confirmer == nil {
		opts.Confirmer = testSigner(t, nil)
	}
	var err error
	if n.g, err = mcpguard.New(p, n.auth, &opts); err != nil {
		t.Fatal(err)
	}
	n.gi = n.g
	if second {
		if n.gi, err = mcpguard.New(p, n.auth, &opts); err != nil {
			t.Fatal(err)
		}
	}
	obj := map[string]any{"type": "object"}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	who := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n.refunds.Add(1)
		return textResult("refund by " + mcpguard.PrincipalFromContext(ctx).Subject), nil
	}
	for _, it := range []struct {
		t *mcp.Tool
		h mcp.ToolHandler
	}{
		{&mcp.Tool{Name: "trigger_refund", InputSchema: obj}, who},
		{&mcp.Tool{Name: "admin_refund", InputSchema: obj}, who},
		{&mcp.Tool{Name: "panicky", InputSchema: obj, Annotations: ro},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("inner boom") }},
	} {
		if n.inner[it.t.Name], err = n.gi.Wrap(it.t, it.h); err != nil {
			t.Fatal(err)
		}
	}
	outer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Inner string `json:"inner"`
			Bare  bool   `json:"bare"` // no session: a request of the handler's own
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		r := &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra,
			Params: &mcp.CallToolParamsRaw{Name: in.Inner, Arguments: json.RawMessage(`{}`),
				RequestState: req.Params.RequestState, InputResponses: req.Params.InputResponses}}
		if in.Bare {
			r.Session, r.Extra = nil, nil
		}
		res, err := n.inner[in.Inner](ctx, r)
		if n.recover && (err != nil || res.IsError) {
			return textResult("inner failed: " + codeOf(t, res, err)), nil
		}
		return res, err
	}
	n.srv = mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
	in := map[string]any{"type": "object", "properties": map[string]any{
		"inner": map[string]any{"type": "string"}, "bare": map[string]any{"type": "boolean"}}}
	for _, tl := range []*mcp.Tool{
		{Name: "refund_and_notify", InputSchema: in},
		{Name: "lookup_and_refund", InputSchema: in, Annotations: ro},
	} {
		if err := n.g.AddTool(n.srv, tl, outer); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// connect opens a client session on protocol v as id.
func (n *nest) connect(t *testing.T, id *mcpguard.Identity, v string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := n.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.auth.mu.Lock()
	n.auth.ids[ss] = id
	n.auth.mu.Unlock()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "nest-client", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

func (n *nest) reset() {
	n.sink.mu.Lock()
	n.sink.events = nil
	n.sink.mu.Unlock()
}

// outcomes returns the outcome records of tool, as allowed/code/subject.
func (n *nest) outcomes(tool string) []string {
	var out []string
	for _, e := range n.sink.all() {
		if e.Tool == tool && e.Phase == audit.PhaseOutcome {
			out = append(out, fmt.Sprint(e.Allowed, "/", e.Code, "/", e.Subject))
		}
	}
	return out
}

func resText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// TestReview30NestedCaller: the inner call runs as the outer call's
// caller, and is authorized by that caller's roles: bob, who may call
// "lookup_and_refund" but not "admin_refund", is refused the inner call
// (as an unknown tool: it is hidden from him), alice is not; each inner
// record names the real caller. A request the handler makes without the
// call's session (and so without its caller) is unauthenticated, never
// run under a default identity.
func TestReview30NestedCaller(t *testing.T) {
	for _, second := range []bool{false, true} {
		t.Run(fmt.Sprint("second_guard_", second), func(t *testing.T) {
			n := newNest(t, nestAllPolicy(t, nil), mcpguard.Options{}, second)
			n.recover = true
			for _, c := range []struct {
				id         *mcpguard.Identity
				inner      string
				bare       bool
				want, recs string
			}{
				{bob, "admin_refund", false, `inner failed: jsonrpc:unknown tool "admin_refund"`, "false/TOOL_NOT_FOUND/bob"},
				{alice, "admin_refund", false, "refund by alice", "true//alice"},
				{bob, "trigger_refund", false, "refund by bob", "true//bob"},
				{bob, "trigger_refund", true, "inner failed: UNAUTHENTICATED", "false/UNAUTHENTICATED/"},
			} {
				n.reset()
				cs := n.connect(t, c.id, "", nil)
				res, err := call(t, cs, "lookup_and_refund", map[string]any{"inner": c.inner, "bare": c.bare})
				if err != nil {
					t.Fatal(err)
				}
				if got := resText(res); got != c.want {
					t.Errorf("%s via lookup_and_refund (bare %v) of %s: %q, want %q", c.id.Principal.Subject, c.bare, c.inner, got, c.want)
				}
				if got := n.outcomes(c.inner); len(got) != 1 || got[0] != c.recs {
					t.Errorf("%s's inner call of %s: records %q, want [%s]", c.id.Principal.Subject, c.inner, got, c.recs)
				}
			}
		})
	}
}

// TestReview30NestedAudit: a composite write's call makes four records,
// none lost or doubled: the outer write's intent, the inner write's intent
// and outcome, and the outer's outcome, in that order, each pair with a
// correlation id of its own, both naming the real caller.
func TestReview30NestedAudit(t *testing.T) {
	for _, second := range []bool{false, true} {
		t.Run(fmt.Sprint("second_guard_", second), func(t *testing.T) {
			n := newNest(t, nestAllPolicy(t, nil), mcpguard.Options{}, second)
			cs := n.connect(t, bob, "", nil)
			res, err := call(t, cs, "refund_and_notify", map[string]any{"inner": "trigger_refund"})
			if err != nil || res.IsError {
				t.Fatalf("refund_and_notify: %v %s", err, r30Text(res))
			}
			if err := n.g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			var got []string
			corr := map[string]string{}
			for _, e := range n.sink.all() {
				got = append(got, e.Tool+"/"+string(e.Phase))
				if c, ok := corr[e.Tool]; ok && c != e.CorrelationID {
					t.Errorf("%s: records with correlation ids %s and %s", e.Tool, c, e.CorrelationID)
				}
				corr[e.Tool] = e.CorrelationID
				if e.Subject != "bob" {
					t.Errorf("%s/%s: subject %q, want bob", e.Tool, e.Phase, e.Subject)
				}
			}
			want := []string{"refund_and_notify/intent", "trigger_refund/intent", "trigger_refund/outcome", "refund_and_notify/outcome"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("records %q, want %q", got, want)
			}
			if corr["refund_and_notify"] == corr["trigger_refund"] || corr["trigger_refund"] == "" {
				t.Errorf("correlation ids: %v, want two distinct", corr)
			}
		})
	}
}

// TestReview30NestedLimits: the inner call is charged as a call of its
// own (its rate and its cost, against the real caller's budgets) and holds
// an in-flight place of its own. Under an in-flight cap of one per user,
// the outer call holds the only place: the inner call is refused at once,
// CONCURRENCY_LIMIT_EXCEEDED (no wait, no deadlock), charged nothing, and
// the outer's place is given back when it ends.
func TestReview30NestedLimits(t *testing.T) {
	t.Run("rate_and_spend", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 3, Window: time.Hour},
			{Kind: limiter.Spend, Scope: limiter.User, Max: 7, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := newNest(t, nestAllPolicy(t, nil), mcpguard.Options{Limiter: lim}, false)
		n.recover = true
		cs := n.connect(t, bob, "", nil)
		var got []string
		for range 2 {
			res, err := call(t, cs, "refund_and_notify", map[string]any{"inner": "trigger_refund"})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, codeOf(t, res, err)+resText(res))
		}
		// The first call and its inner call take 2 of 3 calls and 5 of 7
		// spend; the second call takes the third, and its inner call is
		// refused (rate, or spend: both are spent).
		if got[0] != "refund by bob" || !strings.HasPrefix(got[1], "inner failed: ") || !strings.HasSuffix(got[1], "_LIMIT_EXCEEDED") {
			t.Errorf("two composite calls under 3 calls and 7 spend an hour: %q", got)
		}
		if n.refunds.Load() != 1 {
			t.Errorf("%d refunds, want 1", n.refunds.Load())
		}
	})
	t.Run("inflight_one", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := newNest(t, nestAllPolicy(t, nil), mcpguard.Options{Limiter: lim}, false)
		cs := n.connect(t, bob, "", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup_and_refund", Arguments: map[string]any{"inner": "trigger_refund"}})
		if got := codeOf(t, res, err); got != "CONCURRENCY_LIMIT_EXCEEDED" {
			t.Errorf("inner call under an in-flight cap of 1 per user: %q, want CONCURRENCY_LIMIT_EXCEEDED", got)
		}
		if got := n.outcomes("trigger_refund"); fmt.Sprint(got) != "[false/CONCURRENCY_LIMIT_EXCEEDED/bob]" {
			t.Errorf("inner records %q", got)
		}
		// The outer call's place was given back.
		res, err = call(t, cs, "lookup_and_refund", map[string]any{"inner": "panicky"})
		if got := codeOf(t, res, err); got != "CONCURRENCY_LIMIT_EXCEEDED" {
			t.Errorf("second call: %q, want its inner call refused again, not the outer", got)
		}
		if got := n.outcomes("lookup_and_refund"); len(got) != 2 {
			t.Errorf("outer records %q", got)
		}
	})
}

// TestReview30NestedDryRunAndConfirm: a dry run of a DryRunAware composite
// write makes no real inner write (the inner call is a dry run too, and
// answers with its simulated result). A composite write that needs a
// confirmation calls an inner write that needs one too: the human's
// answer to the outer prompt is not the inner's; the inner asks for its
// own, and runs only once that is given, once, on an older client (asked
// within the call) as on a current one (the inner's input request passed
// on by the outer handler, and its answer handed back in the next round).
func TestReview30NestedDryRunAndConfirm(t *testing.T) {
	t.Run("dry_run", func(t *testing.T) {
		n := newNest(t, nestAllPolicy(t, nil), mcpguard.Options{
			Tools: map[string]mcpguard.ToolOptions{"refund_and_notify": {DryRunAware: true}}}, false)
		cs := n.connect(t, bob, "", nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund_and_notify",
			Arguments: map[string]any{"inner": "trigger_refund"}, Meta: mcp.Meta{dryrun.MetaKey: true}})
		if err != nil || res.IsError {
			t.Fatalf("dry run: %v %s", err, r30Text(res))
		}
		if n.refunds.Load() != 0 {
			t.Errorf("a dry run of the composite write made %d real refunds", n.refunds.Load())
		}
		for _, e := range n.sink.all() {
			if e.Phase == audit.PhaseIntent || !e.DryRun {
				t.Errorf("record of a dry run: %s/%s dry_run %v", e.Tool, e.Phase, e.DryRun)
			}
		}
	})
	p := nestAllPolicy(t, func(c *policy.Config) {
		c.Tools[0].Confirm = true // refund_and_notify
		c.Tools[2].Confirm = true // trigger_refund
	})
	for _, v := range protocolVersions {
		for _, answers := range [][]string{{"accept", "accept"}, {"accept", "decline"}} {
			t.Run(fmt.Sprint("confirm_", versionName(v), "_", answers[1]), func(t *testing.T) {
				n := newNest(t, p, mcpguard.Options{}, false)
				var asked []string
				cs := n.connect(t, bob, v, &mcp.ClientOptions{
					ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = append(asked, r.Params.Message)
						if len(asked) > len(answers) {
							return &mcp.ElicitResult{Action: "cancel"}, nil
						}
						return &mcp.ElicitResult{Action: answers[len(asked)-1], Content: map[string]any{}}, nil
					},
				})
				res, err := call(t, cs, "refund_and_notify", map[string]any{"inner": "trigger_refund"})
				if err != nil {
					t.Fatal(err)
				}
				if len(asked) != 2 || !strings.Contains(asked[0], "refund_and_notify") || !strings.Contains(asked[1], "trigger_refund") {
					t.Errorf("prompts %q, want one for refund_and_notify, then one for trigger_refund", asked)
				}
				want := int64(1)
				if answers[1] != "accept" {
					want = 0
				}
				if got := n.refunds.Load(); got != want {
					t.Errorf("refunds %d, want %d (answer %s): %s", got, want, answers[1], r30Text(res))
				}
			})
		}
	}
}

// TestReview30NestedPanic: the inner handler panics. The inner call's
// guard recovers it (the process lives) and records it, INTERNAL; the
// outer handler gets a tool error it can recover from (the outer call then
// succeeds), or pass on: the outer call is then refused INTERNAL, for a
// write not retryable (its handler ran), each call with one outcome record.
func TestReview30NestedPanic(t *testing.T) {
	for _, outer := range []string{"refund_and_notify", "lookup_and_refund"} {
		for _, recov := range []bool{true, false} {
			t.Run(fmt.Sprint(outer, "_recover_", recov), func(t *testing.T) {
				n := newNest(t, nestAllPolicy(t, nil), mcpguard.Options{}, false)
				n.recover = recov
				cs := n.connect(t, bob, "", nil)
				res, err := call(t, cs, outer, map[string]any{"inner": "panicky"})
				if err != nil {
					t.Fatal(err)
				}
				if got := n.outcomes("panicky"); fmt.Sprint(got) != "[false/INTERNAL/bob]" {
					t.Errorf("inner records %q", got)
				}
				if recov {
					if got := resText(res); got != "inner failed: INTERNAL" {
						t.Errorf("outer answer %q", got)
					}
					if got := n.outcomes(outer); fmt.Sprint(got) != "[true//bob]" {
						t.Errorf("outer records %q", got)
					}
					return
				}
				code, _, retryable := r2Error(t, res)
				if code != "INTERNAL" || (retryable && outer == "refund_and_notify") {
					t.Errorf("outer answer: %s retryable %v", code, retryable)
				}
				if got := n.outcomes(outer); fmt.Sprint(got) != "[false/INTERNAL/bob]" {
					t.Errorf("outer records %q", got)
				}
			})
		}
	}
}

// TestReview30NestedDeadline: "refund_and_notify" (a write) and
// "lookup_and_refund" (a read) have a per-call deadline (Timeout) and call
// the guarded write "trigger_refund" in-process with their context. The
// deadline bounds the whole call, the write it makes in-process included:
// the inner write's handler must see the outer call's deadline, as the
// outer handler's own work does, not run on after it with the outer call
// waiting. Before, the inner write detached its context from its caller's
// (so that its caller's cancellation does not stop a started write), and
// dropped its caller's deadline with it: the outer call overran its
// Timeout for as long as the inner write took.
func TestReview30NestedDeadline(t *testing.T) {
	for _, outer := range []string{"refund_and_notify", "lookup_and_refund"} {
		t.Run(outer, func(t *testing.T) {
			p := nestPolicy(t)
			g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: &memSink{}, Logger: quiet,
				Tools: map[string]mcpguard.ToolOptions{outer: {Timeout: 200 * time.Millisecond}}})
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"type": "object"}
			var sawDeadline atomic.Bool
			inner, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					_, ok := ctx.Deadline()
					sawDeadline.Store(ok)
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(3 * time.Second):
						return textResult("refund R-1 made"), nil
					}
				})
			if err != nil {
				t.Fatal(err)
			}
			tool := &mcp.Tool{Name: outer, InputSchema: obj}
			if outer == "lookup_and_refund" {
				tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
			if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
			}); err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, srv, nil, "")
			start := time.Now()
			res, err := call(t, cs, outer, map[string]any{})
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("a call with a 200ms deadline took %v: the write it made in-process ran past it", d.Round(time.Millisecond))
			}
			if !sawDeadline.Load() {
				t.Errorf("the inner write's handler had no deadline")
			}
			if got := codeOf(t, res, err); got != "UPSTREAM_UNAVAILABLE" {
				t.Errorf("outer call: %q, want UPSTREAM_UNAVAILABLE (timed out)", got)
			}
		})
	}
}
