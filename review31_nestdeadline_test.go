package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ndDeadline is the outer call's deadline in these tests.
const ndDeadline = 150 * time.Millisecond

// ndTimedOut is what a call refused for its deadline before its tool ran
// is told: the code and the first words of a timeout of a call elsewhere
// (UPSTREAM_UNAVAILABLE, "the tool timed out"), retryable, as nothing was
// done.
const ndTimedOut = "the tool timed out before it ran: "

// ndAnswer is the error object of a tool-error result, read without
// failing the test (a handler reads it).
type ndAnswer struct {
	Code, Message string
	Retryable     bool
}

func ndRead(res *mcp.CallToolResult, err error) ndAnswer {
	if err != nil {
		return ndAnswer{Code: "error", Message: err.Error()}
	}
	if res == nil || !res.IsError {
		return ndAnswer{Code: "ok"}
	}
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &body)
	return ndAnswer{body.Error.Code, body.Error.Message, body.Error.Retryable}
}

// ndLimiter caps "trigger_refund" (cost 5) at a spend of 5 and one call in
// flight per user: a call after one that was charged and not given back,
// or that kept its place, is refused.
func ndLimiter(t *testing.T) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "trigger_refund", Max: 5, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "trigger_refund", Max: 1},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// TestReview31NestDeadlineConfirm: "refund_and_notify" (a write) or
// "lookup_and_refund" (a read) calls "trigger_refund", a write that needs
// a confirmation, in-process with its context; an older client's human is
// asked to confirm within the call, and the outer call's deadline (its
// guard's Options.Timeout, or a context deadline its handler sets) ends
// while the human looks at the question. The inner call timed out: it is
// refused UPSTREAM_UNAVAILABLE, "the tool timed out", as a call whose
// deadline ends elsewhere is, but retryable (its tool was not run), and
// its record says the deadline passed while the user was asked; the outer
// call, which passes the answer on, is refused with it and records it.
// Before, the inner call was refused CONFIRMATION_REQUIRED, "the user
// could not be asked to confirm", as if no one could be asked, and
// recorded "elicitation failed". The inner tool is not run, its cost is
// not spent and its in-flight place is given back (a next call, confirmed
// at once, runs under a spend cap of one call and an in-flight cap of 1),
// and Wait returns. So whether the outer tool is added by AddTool or
// guarded by Install, the inner tool of the same guard or another's; and
// for a call by a server's own tool, not guarded, with a deadline of its
// own.
func TestReview31NestDeadlineConfirm(t *testing.T) {
	rules := []policy.ToolRule{
		{Name: "refund_and_notify", Class: policy.Write},
		{Name: "lookup_and_refund", Class: policy.Read},
		{Name: "trigger_refund", Class: policy.Write, Confirm: true, Cost: 5},
	}
	type tc struct{ outer, mode, deadline string }
	var cases []tc
	for _, outer := range []string{"refund_and_notify", "lookup_and_refund"} {
		for _, mode := range []string{"addtool", "install", "addtool_second_guard", "install_second_guard"} {
			for _, dl := range []string{"timeout", "ctx"} {
				cases = append(cases, tc{outer, mode, dl})
			}
		}
	}
	cases = append(cases, tc{"unguarded", "addtool", "ctx"}, tc{"unguarded", "addtool_second_guard", "ctx"})
	for _, c := range cases {
		t.Run(c.outer+"/"+c.mode+"/"+c.deadline, func(t *testing.T) {
			p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"refund_and_notify", "trigger_refund"}})
			sink := &memSink{}
			lim := ndLimiter(t)
			signer := testSigner(t, nil)
			opts := mcpguard.Options{Audit: sink, Logger: quiet, Confirmer: signer, Limiter: lim}
			outerOpts := opts
			if c.deadline == "timeout" {
				outerOpts.Timeout = ndDeadline
			}
			g, err := mcpguard.New(p, fixed(bob), &outerOpts)
			if err != nil {
				t.Fatal(err)
			}
			gi := g
			if strings.HasSuffix(c.mode, "second_guard") {
				if gi, err = mcpguard.New(p, fixed(bob), &opts); err != nil {
					t.Fatal(err)
				}
			}
			obj := map[string]any{"type": "object"}
			var refunds atomic.Int64
			inner, err := gi.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					refunds.Add(1) // the handler ignores its context, as many do
					return textResult("refund R-1 made"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			var innerGot ndAnswer
			var mu sync.Mutex
			outer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if c.deadline == "ctx" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, ndDeadline)
					defer cancel()
				}
				res, err := nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
				mu.Lock()
				innerGot = ndRead(res, err)
				mu.Unlock()
				return res, err
			}
			name := c.outer
			if name == "unguarded" {
				name = "lookup_and_refund" // not guarded here
			}
			tool := &mcp.Tool{Name: name, InputSchema: obj}
			if name == "lookup_and_refund" {
				tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
			switch {
			case c.outer == "unguarded":
				srv.AddTool(tool, outer)
			case strings.HasPrefix(c.mode, "install"):
				srv.AddTool(tool, outer)
				if err := g.Install(srv); err != nil {
					t.Fatal(err)
				}
			default:
				if err := g.AddTool(srv, tool, outer); err != nil {
					t.Fatal(err)
				}
			}
			var slow atomic.Bool
			slow.Store(true)
			cs := connectVersion(t, srv, &mcp.ClientOptions{
				ElicitationHandler: func(ectx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if slow.Load() {
						// The human takes longer than the outer call may.
						select {
						case <-ectx.Done():
							return nil, ectx.Err()
						case <-time.After(3 * time.Second):
						}
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
				},
			}, "2025-11-25")

			start := time.Now()
			res, err := call(t, cs, name, map[string]any{})
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("a call with a %v deadline took %v", ndDeadline, d.Round(time.Millisecond))
			}
			got := ndRead(res, err)
			wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer wcancel()
			if err := g.Wait(wctx); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if err := gi.Wait(wctx); err != nil {
				t.Fatalf("inner guard's Wait: %v", err)
			}
			mu.Lock()
			ig := innerGot
			mu.Unlock()
			// The inner call timed out, its tool not run: retryable.
			if ig.Code != "UPSTREAM_UNAVAILABLE" || !strings.HasPrefix(ig.Message, ndTimedOut) || !ig.Retryable {
				t.Errorf("the inner call's answer: %+v; want UPSTREAM_UNAVAILABLE %q..., retryable", ig, ndTimedOut)
			}
			// The outer call passes it on: a guarded write's handler ran,
			// so its refusal is not retryable; a read's is.
			wantRetry := c.outer != "refund_and_notify"
			if got.Code != "UPSTREAM_UNAVAILABLE" || got.Message != ig.Message || got.Retryable != wantRetry {
				t.Errorf("the outer call's answer: %+v; want the inner's code and message, retryable %v", got, wantRetry)
			}
			var innerRecs, outerRecs []string
			for _, e := range sink.all() {
				rec := fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.Code, "/", e.Detail)
				switch e.Tool {
				case "trigger_refund":
					innerRecs = append(innerRecs, rec)
				case name:
					outerRecs = append(outerRecs, rec)
				}
			}
			wantInner := "[outcome/false/UPSTREAM_UNAVAILABLE/the call's deadline passed while the user was asked to confirm; the tool was not run]"
			if fmt.Sprint(innerRecs) != wantInner {
				t.Errorf("the inner call's records: %q\nwant %q", innerRecs, wantInner)
			}
			if c.outer != "unguarded" {
				wantOuter := "[outcome/false/UPSTREAM_UNAVAILABLE/refused by the tool]"
				if c.outer == "refund_and_notify" {
					wantOuter = "[intent/true// outcome/false/UPSTREAM_UNAVAILABLE/refused by the tool]"
				}
				if fmt.Sprint(outerRecs) != wantOuter {
					t.Errorf("the outer call's records: %q\nwant %q", outerRecs, wantOuter)
				}
			}
			// The answer the human gives too late runs nothing.
			time.Sleep(50 * time.Millisecond)
			if n := refunds.Load(); n != 0 {
				t.Fatalf("the inner tool ran %d times after its caller's deadline", n)
			}
			// Nothing spent, no place kept: a call confirmed at once runs.
			slow.Store(false)
			res, err = call(t, cs, name, map[string]any{})
			if got := ndRead(res, err); got.Code != "ok" || refunds.Load() != 1 {
				t.Errorf("a next call, confirmed at once: %+v, the tool ran %d times; want it run once (its spend and in-flight place were given back)", got, refunds.Load())
			}
		})
	}
}

// TestReview31NestDeadlineDirect pins what a direct call gets, with which
// the nested one above is compared. A direct call's Timeout bounds its
// handler, not the question to the human, which is put before the handler
// runs: a human who answers after the Timeout has his call run. A handler
// whose Timeout ends while it asks the client itself timed out:
// UPSTREAM_UNAVAILABLE, "the tool timed out", recorded as a handler
// error; for a write, whose handler ran, not retryable.
func TestReview31NestDeadlineDirect(t *testing.T) {
	rules := []policy.ToolRule{
		{Name: "confirmed", Class: policy.Write, Confirm: true},
		{Name: "asking", Class: policy.Write},
	}
	p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"confirmed", "asking"}})
	sink := &memSink{}
	g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet,
		Confirmer: testSigner(t, nil), Timeout: ndDeadline})
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"type": "object"}
	srv := mcp.NewServer(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	var ran atomic.Int64
	if err := g.AddTool(srv, &mcp.Tool{Name: "confirmed", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return textResult("done"), nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddTool(srv, &mcp.Tool{Name: "asking", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := req.Session.Elicit(ctx, r30Form("sure?")); err != nil {
				return nil, err
			}
			return textResult("done"), nil
		}); err != nil {
		t.Fatal(err)
	}
	cs := connectVersion(t, srv, &mcp.ClientOptions{
		ElicitationHandler: func(ectx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-ectx.Done():
				return nil, ectx.Err()
			case <-time.After(3 * ndDeadline):
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}, "2025-11-25")

	res, err := call(t, cs, "confirmed", map[string]any{})
	if got := ndRead(res, err); got.Code != "ok" || ran.Load() != 1 {
		t.Errorf("a direct call confirmed after its Timeout: %+v, run %d times; want it run (the Timeout bounds the handler)", got, ran.Load())
	}
	res, err = call(t, cs, "asking", map[string]any{})
	want := ndAnswer{"UPSTREAM_UNAVAILABLE", "the tool timed out; the write may have been made: check before repeating it", false}
	if got := ndRead(res, err); got != want {
		t.Errorf("a direct write whose Timeout ends while it asks the client: %+v, want %+v", got, want)
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var last audit.Event
	for _, e := range sink.all() {
		if e.Tool == "asking" && e.Phase == audit.PhaseOutcome {
			last = e
		}
	}
	if last.Code != "UPSTREAM_UNAVAILABLE" || last.Detail != "handler error: timed out" {
		t.Errorf("its record: %s %q, want UPSTREAM_UNAVAILABLE \"handler error: timed out\"", last.Code, last.Detail)
	}
}

// ndSlowIntents is an audit sink whose write-ahead intents take delay,
// whatever the context says.
type ndSlowIntents struct {
	*memSink
	delay atomic.Int64
}

func (s *ndSlowIntents) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent {
		time.Sleep(time.Duration(s.delay.Load()))
	}
	return s.memSink.Write(ctx, e)
}

// TestReview31NestDeadlineBeforeRun: the outer call's deadline passes
// after the inner write was admitted and before its handler runs (its
// write-ahead intent took that long). The inner write is not run once its
// caller's deadline has passed, which its handler, ignoring its context,
// would not notice: it is refused as timed out before it ran, retryable,
// what it was charged given back (a next call runs under a spend cap of
// one call), and its record, after its intent, says so. Before, the
// handler ran past the deadline and wrote, the outer call waiting on it.
func TestReview31NestDeadlineBeforeRun(t *testing.T) {
	for _, outerTool := range []string{"refund_and_notify", "lookup_and_refund"} {
		t.Run(outerTool, func(t *testing.T) {
			rig := ndBeforeRunRig(t, outerTool, nil)
			srv, sink, refunds, slow := rig.srv, rig.sink, &rig.refunds, &rig.slow
			cs := connectVersion(t, srv, nil, "")
			if _, err := call(t, cs, outerTool, map[string]any{}); err != nil {
				t.Fatal(err)
			}
			rig.checkNotRun(t)
			slow.Store(false)
			sink.delay.Store(0)
			sink.memSink.mu.Lock()
			sink.memSink.events = nil
			sink.memSink.mu.Unlock()
			res, err := call(t, cs, outerTool, map[string]any{})
			if got := ndRead(res, err); got.Code != "ok" || refunds.Load() != 1 {
				t.Errorf("a next call: %+v, the inner write ran %d times; want it run once (its charge was given back)", got, refunds.Load())
			}
		})
	}
}

// ndRig is the composite tool of the before-run tests: outerTool (a write
// or a read, with a Timeout of ndDeadline) calls the write trigger_refund
// (cost 5; confirmed when signer is not nil) in-process, while the
// write-ahead intents are slow (slow) and the inner call's answer is kept.
type ndRig struct {
	g        *mcpguard.Guard
	srv      *mcp.Server
	sink     *ndSlowIntents
	refunds  atomic.Int64 // runs of trigger_refund's handler
	innerGot atomic.Value // the inner call's ndAnswer
	slow     atomic.Bool
	// confirmed: the inner write is confirmed (a signer was given), which
	// its records' detail says first.
	confirmed bool
}

func ndBeforeRunRig(t *testing.T, outerTool string, signer *confirm.Signer) *ndRig {
	t.Helper()
	rules := []policy.ToolRule{
		{Name: "refund_and_notify", Class: policy.Write},
		{Name: "lookup_and_refund", Class: policy.Read},
		{Name: "trigger_refund", Class: policy.Write, Confirm: signer != nil, Cost: 5},
	}
	p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"refund_and_notify", "trigger_refund"}})
	r := &ndRig{sink: &ndSlowIntents{memSink: &memSink{}}, confirmed: signer != nil}
	opts := &mcpguard.Options{Audit: r.sink, Logger: quiet, Limiter: ndLimiter(t),
		Tools: map[string]mcpguard.ToolOptions{outerTool: {Timeout: ndDeadline}}}
	if signer != nil {
		opts.Confirmer = signer
	}
	g, err := mcpguard.New(p, fixed(bob), opts)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"type": "object"}
	inner, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.refunds.Add(1)
			return textResult("refund R-1 made"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	r.slow.Store(true)
	tool := &mcp.Tool{Name: outerTool, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: outerTool == "lookup_and_refund"}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
	if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.slow.Load() {
			r.sink.delay.Store(int64(2 * ndDeadline)) // the outer call's own intent is made
		}
		res, err := nestInnerCall(ctx, inner, req, "trigger_refund", `{}`)
		r.innerGot.Store(ndRead(res, err))
		return res, err
	}); err != nil {
		t.Fatal(err)
	}
	r.g, r.srv = g, srv
	return r
}

// checkNotRun checks, once a call of the rig's outer tool has returned,
// that the inner write was not run, was refused as timed out before it
// ran (retryable), and that its records are its intent and that refusal.
func (r *ndRig) checkNotRun(t *testing.T) {
	t.Helper()
	g, refunds, innerGot, sink := r.g, &r.refunds, &r.innerGot, r.sink
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := refunds.Load(); n != 0 {
		t.Errorf("the inner write ran %d times after its caller's deadline", n)
	}
	ig, _ := innerGot.Load().(ndAnswer)
	if ig.Code != "UPSTREAM_UNAVAILABLE" || !strings.HasPrefix(ig.Message, ndTimedOut) || !ig.Retryable {
		t.Errorf("the inner call's answer: %+v; want UPSTREAM_UNAVAILABLE %q..., retryable", ig, ndTimedOut)
	}
	var recs []string
	for _, e := range sink.all() {
		if e.Tool == "trigger_refund" {
			recs = append(recs, fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.Code, "/", e.Detail))
		}
	}
	want := "[intent/true// outcome/false/UPSTREAM_UNAVAILABLE/the call's deadline passed before the tool ran; the tool was not run]"
	if r.confirmed {
		want = "[intent/true//confirmed by the user outcome/false/UPSTREAM_UNAVAILABLE/confirmed by the user; the call's deadline passed before the tool ran; the tool was not run]"
	}
	if fmt.Sprint(recs) != want {
		t.Errorf("the inner write's records: %q\nwant %q", recs, want)
	}
}
