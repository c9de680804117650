package mcpguard_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// nlRig is a composite tool whose inner calls are limited by a Redis
// limiter: outer (a write or a read, with a Timeout of ndDeadline) calls
// inner (the write trigger_refund or the read lookup_refund, each under an
// in-flight cap of 1 per user; with confirmed, needing a confirmation)
// in-process with its context. With hang set,
// the outer handler freezes the Redis server (SIGSTOP) before the inner
// call and lets it run again once the inner call has returned.
type nlRig struct {
	g        *mcpguard.Guard
	srv      *mcp.Server
	sink     *memSink
	runs     atomic.Int64 // runs of the inner tool's handler
	innerGot atomic.Value // the inner call's ndAnswer
	hang     atomic.Bool
}

func nlNewRig(t *testing.T, rs *testsvc.Redis, addr, outer, inner string, confirmed bool) *nlRig {
	t.Helper()
	rules := []policy.ToolRule{
		{Name: "refund_and_notify", Class: policy.Write},
		{Name: "lookup_and_refund", Class: policy.Read},
		{Name: "trigger_refund", Class: policy.Write, Cost: 5, Confirm: confirmed},
		{Name: "lookup_refund", Class: policy.Read, Confirm: confirmed},
	}
	p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"refund_and_notify", "trigger_refund"}})
	// One dial: a server that is down fails at once, not after retries
	// that outlast the deadline.
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1,
		ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	store := redislimit.New(rdb, &redislimit.Options{Prefix: "nl:" + t.Name() + ":", Timeout: 2 * time.Second})
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "trigger_refund", Max: 1},
		{Kind: limiter.Concurrency, Scope: limiter.User, Tool: "lookup_refund", Max: 1},
	}, &limiter.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	r := &nlRig{sink: &memSink{}}
	opts := &mcpguard.Options{Audit: r.sink, Logger: quiet, Limiter: lim,
		Tools: map[string]mcpguard.ToolOptions{outer: {Timeout: ndDeadline}}}
	if confirmed {
		opts.Confirmer = testSigner(t, nil)
	}
	g, err := mcpguard.New(p, fixed(bob), opts)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"type": "object"}
	innerTool := &mcp.Tool{Name: inner, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: inner == "lookup_refund"}}
	h, err := g.Wrap(innerTool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r.runs.Add(1)
		return textResult("done"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: outer, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: outer == "lookup_and_refund"}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
	if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.hang.Load() {
			if err := rs.Pause(); err != nil {
				t.Error(err)
			}
		}
		res, err := nestInnerCall(ctx, h, req, inner, `{}`)
		if r.hang.Load() {
			if err := rs.Resume(); err != nil {
				t.Error(err)
			}
		}
		r.innerGot.Store(ndRead(res, err))
		return res, err
	}); err != nil {
		t.Fatal(err)
	}
	r.g, r.srv = g, srv
	return r
}

// innerRecords returns the inner call's records as phase/allowed/code/detail.
func (r *nlRig) innerRecords(inner string) string {
	var recs []string
	for _, e := range r.sink.all() {
		if e.Tool == inner {
			recs = append(recs, fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.Code, "/", e.Detail))
		}
	}
	return fmt.Sprint(recs)
}

// TestReview32NestLimitsStoreAtDeadline: the inner call (a write or a
// read) is limited by a Redis limiter, and the Redis server hangs while it
// is asked: the outer call's deadline passes before the limiter decides.
// The store did not fail; the caller's time ran out. The inner call timed
// out before it ran: refused UPSTREAM_UNAVAILABLE, retryable, its tool not
// run, recorded with the detail that says so; a read too, which the
// limiter could not admit. Before, it was refused RATE_LIMIT_EXCEEDED,
// "the rate limiter is unavailable", and recorded as a client that went
// away. Nothing was charged and no place kept: a next call runs. So too
// for an inner call that needs a confirmation, whose cost the limiter is
// asked to check before an older client's human is asked ("confirmed").
func TestReview32NestLimitsStoreAtDeadline(t *testing.T) {
	rs := testsvc.StartRedis(t)
	for _, tc := range [][2]string{
		{"refund_and_notify", "trigger_refund"},
		{"lookup_and_refund", "trigger_refund"},
		{"lookup_and_refund", "lookup_refund"},
		{"refund_and_notify", "lookup_refund"},
		{"refund_and_notify", "trigger_refund/confirmed"},
		{"lookup_and_refund", "lookup_refund/confirmed"},
	} {
		outer, inner, confirmed := tc[0], strings.TrimSuffix(tc[1], "/confirmed"), strings.HasSuffix(tc[1], "/confirmed")
		t.Run(outer+"/"+tc[1], func(t *testing.T) {
			r := nlNewRig(t, rs, rs.Addr, outer, inner, confirmed)
			cs := connectVersion(t, r.srv, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
				},
			}, "2025-11-25")
			r.hang.Store(true)
			start := time.Now()
			if _, err := call(t, cs, outer, map[string]any{}); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("a call with a %v deadline took %v", ndDeadline, d.Round(time.Millisecond))
			}
			if err := r.g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := r.runs.Load(); n != 0 {
				t.Errorf("the inner tool ran %d times", n)
			}
			ig, _ := r.innerGot.Load().(ndAnswer)
			if ig.Code != "UPSTREAM_UNAVAILABLE" || !strings.HasPrefix(ig.Message, ndTimedOut) || !ig.Retryable {
				t.Errorf("the inner call's answer: %+v; want UPSTREAM_UNAVAILABLE %q..., retryable", ig, ndTimedOut)
			}
			want := "[outcome/false/UPSTREAM_UNAVAILABLE/the call's deadline passed before the tool ran; the tool was not run]"
			if got := r.innerRecords(inner); got != want {
				t.Errorf("the inner call's records: %q\nwant %q", got, want)
			}
			// A next call runs once the server is back (the limiter has
			// freed, in the background, the place the frozen request may
			// have taken when it arrived late).
			r.hang.Store(false)
			var got ndAnswer
			for deadline := time.Now().Add(3 * time.Second); ; {
				got = ndRead(call(t, cs, outer, map[string]any{}))
				if got.Code == "ok" || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got.Code != "ok" || r.runs.Load() != 1 {
				t.Errorf("a next call: %+v, the inner tool ran %d times; want it run once", got, r.runs.Load())
			}
		})
	}
}

// TestReview32NestLimitsStoreDownBeforeDeadline: a limiter store that
// fails before the deadline (nothing listens at its address) keeps its
// code: RATE_LIMIT_EXCEEDED, "the rate limiter is unavailable", for a
// nested write and a nested read alike. Only a deadline that has passed
// makes the refusal a timeout.
func TestReview32NestLimitsStoreDownBeforeDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, inner := range []string{"trigger_refund", "lookup_refund"} {
		t.Run(inner, func(t *testing.T) {
			r := nlNewRig(t, nil, addr, "lookup_and_refund", inner, false)
			cs := connectVersion(t, r.srv, nil, "")
			if _, err := call(t, cs, "lookup_and_refund", map[string]any{}); err != nil {
				t.Fatal(err)
			}
			ig, _ := r.innerGot.Load().(ndAnswer)
			want := ndAnswer{"RATE_LIMIT_EXCEEDED", "the rate limiter is unavailable; try again shortly", true}
			if ig != want || r.runs.Load() != 0 {
				t.Errorf("the inner call's answer: %+v, run %d times; want %+v, not run", ig, r.runs.Load(), want)
			}
		})
	}
}

// nlFailingIntents is an audit sink whose write-ahead intents of
// trigger_refund fail after twice the outer call's deadline, or when their
// context ends first; it notes whether such an intent's context had a
// deadline other than Options.WriteAheadTimeout's.
type nlFailingIntents struct {
	*memSink
	sawDeadline atomic.Bool
}

func (s *nlFailingIntents) Write(ctx context.Context, e *audit.Event) error {
	if e.Phase == audit.PhaseIntent && e.Tool == "trigger_refund" {
		// Bounded by Options.WriteAheadTimeout (10 s) only, not by the
		// outer call's deadline.
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 5*time.Second {
			s.sawDeadline.Store(true)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * ndDeadline):
		}
		return errors.New("disk full")
	}
	return s.memSink.Write(ctx, e)
}

// TestReview32NestLimitsIntentFailsAfterDeadline pins what a nested write
// whose write-ahead intent fails after the outer call's deadline gets. The
// sink is not asked with the call's deadline (the intent is durable: its
// context has only Options.WriteAheadTimeout's), so its failure is the sink's
// own, never the deadline's: the write is refused AUDIT_UNAVAILABLE, as
// before the deadline, for a retry would meet the same sink. (A slow
// intent that is written is TestReview31NestDeadlineBeforeRun: the write
// timed out before it ran.)
func TestReview32NestLimitsIntentFailsAfterDeadline(t *testing.T) {
	for _, outer := range []string{"refund_and_notify", "lookup_and_refund"} {
		t.Run(outer, func(t *testing.T) {
			rules := []policy.ToolRule{
				{Name: "refund_and_notify", Class: policy.Write},
				{Name: "lookup_and_refund", Class: policy.Read},
				{Name: "trigger_refund", Class: policy.Write},
			}
			p := r30Policy(t, policy.Config{Tools: rules, WriteAllowlist: []string{"refund_and_notify", "trigger_refund"}})
			sink := &nlFailingIntents{memSink: &memSink{}}
			g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet,
				Tools: map[string]mcpguard.ToolOptions{outer: {Timeout: ndDeadline}}})
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"type": "object"}
			var runs atomic.Int64
			h, err := g.Wrap(&mcp.Tool{Name: "trigger_refund", InputSchema: obj},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					runs.Add(1)
					return textResult("done"), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			var innerGot atomic.Value
			srv := mcp.NewServer(&mcp.Implementation{Name: "nest", Version: "1"}, nil)
			tool := &mcp.Tool{Name: outer, InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: outer == "lookup_and_refund"}}
			if err := g.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res, err := nestInnerCall(ctx, h, req, "trigger_refund", `{}`)
				innerGot.Store(ndRead(res, err))
				return res, err
			}); err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, srv, nil, "")
			if _, err := call(t, cs, outer, map[string]any{}); err != nil {
				t.Fatal(err)
			}
			if err := g.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if sink.sawDeadline.Load() {
				t.Error("the write-ahead intent was written with the outer call's deadline, or none")
			}
			ig, _ := innerGot.Load().(ndAnswer)
			want := ndAnswer{"AUDIT_UNAVAILABLE", "the audit trail is unavailable; the write was not attempted", true}
			if ig != want || runs.Load() != 0 {
				t.Errorf("the inner write's answer: %+v, run %d times; want %+v, not run", ig, runs.Load(), want)
			}
			var recs []string
			for _, e := range sink.all() {
				if e.Tool == "trigger_refund" {
					recs = append(recs, fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.Code, "/", e.Detail))
				}
			}
			if got, want := fmt.Sprint(recs), "[outcome/false/AUDIT_UNAVAILABLE/write-ahead intent not recorded]"; got != want {
				t.Errorf("the inner write's records: %q\nwant %q", got, want)
			}
		})
	}
}
