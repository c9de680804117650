package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/limiter/redislimit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// dsT0 is the fixed clock of the dry-run spend tests: a time without a
// monotonic reading, so that waits are exact.
var dsT0 = time.Unix(1_700_000_000, 0)

// dsCost is a Cost function: the call's "amount" argument.
func dsCost(args map[string]any) (float64, error) {
	n, ok := args["amount"].(json.Number)
	if !ok {
		return 0, fmt.Errorf("no amount")
	}
	return n.Float64()
}

// dsTools are the tool options of the tests: add_note costs its amount.
func dsTools(aware bool) map[string]mcpguard.ToolOptions {
	return map[string]mcpguard.ToolOptions{"add_note": {Cost: dsCost, DryRunAware: aware}}
}

// dsSpendLimiter is a limiter with a spend cap of 10 per hour per user on
// store s (nil: in memory).
func dsSpendLimiter(t *testing.T, s limiter.Store, opts *limiter.Options) *limiter.Limiter {
	t.Helper()
	if opts == nil {
		opts = &limiter.Options{}
	}
	opts.Store = s
	l, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dsNote is the arguments of an add_note of amount.
func dsNote(amount string) string { return `{"title":"t","amount":` + amount + `}` }

// errorBody returns the error object of a refusal result, or nil for a
// success.
func errorBody(t *testing.T, res *mcp.CallToolResult, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	if !res.IsError {
		return nil
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var body struct{ Error map[string]any }
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return body.Error
}

// dsDo calls h with r and returns the error object of its answer, or nil
// for a success.
func dsDo(t *testing.T, h mcp.ToolHandler, r *mcp.CallToolRequest) map[string]any {
	t.Helper()
	res, err := h(context.Background(), r)
	return errorBody(t, res, err)
}

// dsGuard returns a handler guarded by a Guard with lim, the stub it
// protects and the audit sink.
func dsGuard(t *testing.T, lim *limiter.Limiter, aware bool) (mcp.ToolHandler, *stub, *memSink) {
	t.Helper()
	var s stub
	h, sink := dsGuardOf(t, lim, aware, s.handle)
	return h, &s, sink
}

// dsSafe is a handler safe for concurrent calls (a stub is not).
func dsSafe(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return textResult("ok"), nil
}

// dsGuardOf returns next guarded by a Guard with lim, and the audit sink.
func dsGuardOf(t *testing.T, lim *limiter.Limiter, aware bool, next mcp.ToolHandler) (mcp.ToolHandler, *memSink) {
	t.Helper()
	sink := &memSink{}
	g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
		Limiter: lim, Tools: dsTools(aware), Audit: sink, Logger: quiet, Confirmer: testSigner(t, nil),
		Now: func() time.Time { return dsT0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: noteSchema}, next)
	if err != nil {
		t.Fatal(err)
	}
	return h, sink
}

// dsLimitStep returns a handler behind the stand-alone Limit step.
func dsLimitStep(t *testing.T, lim *limiter.Limiter, aware bool) (mcp.ToolHandler, *stub) {
	t.Helper()
	lm, err := mcpguard.Limit(lim, stepPolicy(t), &mcpguard.Options{Tools: dsTools(aware), Logger: quiet, Now: func() time.Time { return dsT0 }})
	if err != nil {
		t.Fatal(err)
	}
	var s stub
	return mcpguard.Authenticate(fixed(bob))(lm(s.handle)), &s
}

// TestDryRunMeetsTheSpendCap checks that a dry run of a write is refused
// with the SPEND_LIMIT_EXCEEDED (and wait) the real call would get when
// its cost does not fit in the spend cap now, charging nothing, so that a
// real call after it still fits exactly; and that one under the cap is
// answered as before, also charging nothing. For the Guard and the
// stand-alone Limit step, for a simulated answer and a DryRunAware handler.
// Before, a dry run checked no spend cap: it was answered as would-succeed.
func TestDryRunMeetsTheSpendCap(t *testing.T) {
	type setup func(t *testing.T, lim *limiter.Limiter, aware bool) (mcp.ToolHandler, *stub)
	setups := map[string]setup{
		"guard": func(t *testing.T, lim *limiter.Limiter, aware bool) (mcp.ToolHandler, *stub) {
			h, s, _ := dsGuard(t, lim, aware)
			return h, s
		},
		"limit_step": dsLimitStep,
	}
	for name, mk := range setups {
		for _, aware := range []bool{false, true} {
			t.Run(name+"/aware_"+strconv.FormatBool(aware), func(t *testing.T) {
				h, s := mk(t, dsSpendLimiter(t, nil, nil), aware)
				if e := dsDo(t, h, req("add_note", dsNote("7"))); e != nil {
					t.Fatalf("real call of 7 of 10: %v", e)
				}
				// 5 does not fit in the 3 left: refused, as the real call would be.
				e := dsDo(t, h, dryReq("add_note", dsNote("5")))
				want := map[string]any{"code": "SPEND_LIMIT_EXCEEDED", "retryable": true, "retry_after_seconds": 720.0}
				got := map[string]any{"code": e["code"], "retryable": e["retryable"], "retry_after_seconds": e["retry_after_seconds"]}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("dry run of 5 with 3 left (-want +got):\n%s", diff)
				}
				// The same real call gets the same answer.
				real := dsDo(t, h, req("add_note", dsNote("5")))
				if diff := cmp.Diff(e["retry_after_seconds"], real["retry_after_seconds"]); diff != "" || real["code"] != e["code"] {
					t.Errorf("real call after the dry run: %v, dry run: %v", real, e)
				}
				// A dry run that fits is answered and charges nothing.
				if e := dsDo(t, h, dryReq("add_note", dsNote("3"))); e != nil {
					t.Errorf("dry run of 3 with 3 left: %v, want a preview", e)
				}
				if e := dsDo(t, h, dryReq("add_note", dsNote("3"))); e != nil {
					t.Errorf("second dry run of 3 with 3 left: %v, want a preview", e)
				}
				ran := s.ran
				if e := dsDo(t, h, req("add_note", dsNote("3"))); e != nil {
					t.Errorf("real call of the 3 left after the dry runs: %v", e)
				}
				if e := dsDo(t, h, req("add_note", dsNote("0.01"))); e == nil || e["code"] != "SPEND_LIMIT_EXCEEDED" {
					t.Errorf("real call past the cap: %v, want SPEND_LIMIT_EXCEEDED", e)
				}
				wantRan := 2 // the two real calls that fit
				if aware {
					wantRan += 2 // and the two previews, in dry-run
				}
				if s.ran != wantRan || ran != wantRan-1 {
					t.Errorf("handler ran %d times (%d before the last real call), want %d", s.ran, ran, wantRan)
				}
			})
		}
	}
}

// TestDryRunOverTheWholeCap checks that a dry run costing more than the
// cap holds in all is refused as the real call is: not retryable.
func TestDryRunOverTheWholeCap(t *testing.T) {
	h, s, sink := dsGuard(t, dsSpendLimiter(t, nil, nil), false)
	e := dsDo(t, h, dryReq("add_note", dsNote("11")))
	if e == nil || e["code"] != "SPEND_LIMIT_EXCEEDED" || e["retryable"] != false || e["retry_after_seconds"] != nil {
		t.Errorf("dry run of 11 of 10: %v, want SPEND_LIMIT_EXCEEDED, not retryable, no wait", e)
	}
	if s.ran != 0 {
		t.Errorf("handler ran %d times", s.ran)
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d audit events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	if !ev.DryRun || ev.Code != "SPEND_LIMIT_EXCEEDED" || ev.Cost != 0 || ev.Allowed {
		t.Errorf("record: dry_run %v code %q cost %v allowed %v, want true SPEND_LIMIT_EXCEEDED 0 false", ev.DryRun, ev.Code, ev.Cost, ev.Allowed)
	}
}

// TestDryRunFixedRuleCost checks the rule's fixed Cost too: add_note
// costs 1 under the policy.
func TestDryRunFixedRuleCost(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.Session, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := mcpguard.Authenticate(fixed(bob))(must(t)(mcpguard.Limit(lim, stepPolicy(t), &mcpguard.Options{Logger: quiet}))((&stub{}).handle))
	for i, want := range []string{"", "", "", "SPEND_LIMIT_EXCEEDED", "SPEND_LIMIT_EXCEEDED"} {
		r := req("add_note", `{"text":"x"}`)
		if i == 0 || i == 3 {
			r = dryReq("add_note", `{"text":"x"}`)
		}
		if got := codeOfCall(t, h, r); got != want {
			t.Errorf("call %d (dry %v): %q, want %q", i, i == 0 || i == 3, got, want)
		}
	}
}

// TestDryRunNeverFailsARealCall runs real calls whose costs fill the cap
// exactly, concurrently with dry runs of every size: every real call is
// allowed (a dry run never holds, even for a moment, what a real call
// needs), and the cap is then full.
func TestDryRunNeverFailsARealCall(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.Global, Max: 40, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := dsGuardOf(t, lim, false, dsSafe)
	dsRace(t, h)
}

// dsRace runs 40 real calls of 1 against a cap of 40, with dry runs
// alongside, through h.
func dsRace(t *testing.T, h mcp.ToolHandler) {
	t.Helper()
	ctx := context.Background()
	stop := make(chan struct{})
	var dry sync.WaitGroup
	for g := range 4 {
		dry.Add(1)
		go func() {
			defer dry.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := h(ctx, dryReq("add_note", dsNote(strconv.Itoa(1+(g+i)%40))))
				if err != nil {
					t.Errorf("dry run: %v", err)
					return
				}
				if e := errorBody(t, res, nil); e != nil && e["code"] != "SPEND_LIMIT_EXCEEDED" {
					t.Errorf("dry run: %v", e)
				}
			}
		}()
	}
	var real sync.WaitGroup
	refused := make(chan map[string]any, 40)
	for range 40 {
		real.Add(1)
		go func() {
			defer real.Done()
			if e := dsDo(t, h, req("add_note", dsNote("1"))); e != nil {
				refused <- e
			}
		}()
	}
	real.Wait()
	close(stop)
	dry.Wait()
	close(refused)
	for e := range refused {
		t.Errorf("a real call within the cap was refused: %v", e)
	}
	if e := dsDo(t, h, dryReq("add_note", dsNote("1"))); e == nil || e["code"] != "SPEND_LIMIT_EXCEEDED" {
		t.Errorf("dry run once the cap is full: %v, want SPEND_LIMIT_EXCEEDED", e)
	}
}

// TestDryRunEndToEnd checks the refusal of a dry run over a real server
// and client, in both reporting modes, and its audit record.
func TestDryRunEndToEnd(t *testing.T) {
	for _, protocol := range []bool{false, true} {
		t.Run("protocol_errors_"+strconv.FormatBool(protocol), func(t *testing.T) {
			lim := dsSpendLimiter(t, nil, nil)
			h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim, Tools: dsTools(false), ProtocolErrors: protocol})
			cs := h.connect(bob, clientOpts{})
			ctx := context.Background()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t", "amount": 8}})
			if err != nil || res.IsError {
				t.Fatalf("real call of 8: %v %s", err, mustJSON(res))
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t", "amount": 3}, Meta: mcp.Meta{"io.mcpguard/dryRun": true}})
			if protocol {
				we := wireError(err)
				if we == nil || we.Code != -32029 {
					t.Fatalf("dry run of 3 with 2 left: %v %s, want JSON-RPC -32029", err, mustJSON(res))
				}
				var data map[string]any
				if err := json.Unmarshal(we.Data, &data); err != nil || data["code"] != "SPEND_LIMIT_EXCEEDED" {
					t.Errorf("data %s: %v", we.Data, err)
				}
			} else if got := errorCode(t, res); err != nil || got != "SPEND_LIMIT_EXCEEDED" {
				t.Fatalf("dry run of 3 with 2 left: %v %q", err, got)
			}
			if n := h.down.calls.Load(); n != 1 {
				t.Errorf("downstream touched %d times, want 1", n)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t", "amount": 2}})
			if err != nil || res.IsError {
				t.Errorf("real call of the 2 left: %v %s", err, mustJSON(res))
			}
			var dry []string
			for _, ev := range h.sink.all() {
				if ev.DryRun {
					dry = append(dry, fmt.Sprintf("%s %v %s cost=%v", ev.Phase, ev.Allowed, ev.Code, ev.Cost))
				}
			}
			if diff := cmp.Diff([]string{"outcome false SPEND_LIMIT_EXCEEDED cost=0"}, dry); diff != "" {
				t.Errorf("dry-run records (-want +got):\n%s", diff)
			}
		})
	}
}

// dsRedis starts a Redis server and returns it and a store on it.
func dsRedis(t *testing.T) (*testsvc.Redis, *redislimit.Store) {
	t.Helper()
	srv := testsvc.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return srv, redislimit.New(c, &redislimit.Options{Timeout: 2 * time.Second})
}

// TestDryRunMeetsTheSpendCapRedis is TestDryRunMeetsTheSpendCap on the
// Redis store, at the server's time, for the Guard and the Limit step.
func TestDryRunMeetsTheSpendCapRedis(t *testing.T) {
	for _, name := range []string{"guard", "limit_step"} {
		t.Run(name, func(t *testing.T) {
			_, st := dsRedis(t)
			lim := dsSpendLimiter(t, st, nil)
			var h mcp.ToolHandler
			if name == "guard" {
				h, _, _ = dsGuard(t, lim, false)
			} else {
				h, _ = dsLimitStep(t, lim, false)
			}
			if e := dsDo(t, h, req("add_note", dsNote("7"))); e != nil {
				t.Fatalf("real call of 7 of 10: %v", e)
			}
			e := dsDo(t, h, dryReq("add_note", dsNote("5")))
			if e == nil || e["code"] != "SPEND_LIMIT_EXCEEDED" || e["retryable"] != true {
				t.Fatalf("dry run of 5 with 3 left: %v, want SPEND_LIMIT_EXCEEDED, retryable", e)
			}
			// 720s at the decision; the server's clock has moved on a little.
			if w, _ := e["retry_after_seconds"].(float64); w < 715 || w > 720 {
				t.Errorf("retry_after_seconds %v, want about 720", e["retry_after_seconds"])
			}
			if e := dsDo(t, h, dryReq("add_note", dsNote("2.9"))); e != nil {
				t.Errorf("dry run of 2.9 with 3 left: %v, want a preview", e)
			}
			if e := dsDo(t, h, req("add_note", dsNote("2.9"))); e != nil {
				t.Errorf("real call of 2.9 after the dry runs: %v", e)
			}
			if e := dsDo(t, h, dryReq("add_note", dsNote("0.2"))); e == nil || e["code"] != "SPEND_LIMIT_EXCEEDED" {
				t.Errorf("dry run of 0.2 with about 0.1 left: %v, want SPEND_LIMIT_EXCEEDED", e)
			}
		})
	}
}

// TestDryRunNeverFailsARealCallRedis is TestDryRunNeverFailsARealCall on
// the Redis store.
func TestDryRunNeverFailsARealCallRedis(t *testing.T) {
	_, st := dsRedis(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.Global, Max: 40, Window: 1000 * time.Hour}}, &limiter.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := dsGuardOf(t, lim, false, dsSafe)
	dsRace(t, h)
}

// TestDryRunStoreDown checks that a dry run whose limiter store is down
// gets what the real call would get: refused by default (the limiter
// fails closed), let through with FailOpenWrites (a dry run is a write's
// preview).
func TestDryRunStoreDown(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run("fail_open_writes_"+strconv.FormatBool(open), func(t *testing.T) {
			srv, st := dsRedis(t)
			lim := dsSpendLimiter(t, st, &limiter.Options{FailOpenWrites: open})
			h, s, _ := dsGuard(t, lim, false)
			srv.Stop()
			dry := dsDo(t, h, dryReq("add_note", dsNote("1")))
			real := dsDo(t, h, req("add_note", dsNote("1")))
			if open {
				if dry != nil || real != nil {
					t.Errorf("fail open: dry run %v, real call %v, want both through", dry, real)
				}
				return
			}
			for what, e := range map[string]map[string]any{"dry run": dry, "real call": real} {
				if e == nil || e["code"] != "RATE_LIMIT_EXCEEDED" || e["retry_after_seconds"] != 1.0 {
					t.Errorf("%s with the store down: %v, want RATE_LIMIT_EXCEEDED after 1s", what, e)
				}
			}
			if s.ran != 0 {
				t.Errorf("handler ran %d times", s.ran)
			}
		})
	}
}

// TestDryRunRateAsBefore checks that a dry run still counts one call
// against the rate, and that one refused for spend counts none.
func TestDryRunRateAsBefore(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ := dsGuard(t, lim, false)
	var got []string
	for _, r := range []*mcp.CallToolRequest{
		dryReq("add_note", dsNote("6")), // spend: refused, counts no call
		dryReq("add_note", dsNote("5")), // one call
		req("add_note", dsNote("5")),    // the second
		dryReq("add_note", dsNote("1")), // rate
	} {
		e := dsDo(t, h, r)
		code, _ := e["code"].(string)
		got = append(got, code)
	}
	if diff := cmp.Diff([]string{"SPEND_LIMIT_EXCEEDED", "", "", "RATE_LIMIT_EXCEEDED"}, got); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
}
