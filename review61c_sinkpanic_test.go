package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r61cPanicSink records events, but panics on those panics says to (a
// sink's bug: a custom SinkFunc, a slog handler that panics).
type r61cPanicSink struct {
	mu     sync.Mutex
	evs    []audit.Event
	panics func(*audit.Event) bool
}

func (s *r61cPanicSink) Write(_ context.Context, e *audit.Event) error {
	if s.panics(e) {
		panic("review61c: the sink's bug")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, *e)
	return nil
}

func (s *r61cPanicSink) all() []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Event(nil), s.evs...)
}

// r61cGuard returns a guard over a read tool "r" and a write tool "w",
// each of cost 1 under a spend cap of 1 per user, auditing to sink, and
// the two tools' wrapped handlers, which count their runs in ran.
func r61cGuard(t *testing.T, sink audit.Sink, ran *int) (r, w mcp.ToolHandler) {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "r", Class: policy.Read, Cost: 1}, {Name: "w", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"w"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		*ran++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if r, err = g.Wrap(&mcp.Tool{Name: "r", InputSchema: schema}, h); err != nil {
		t.Fatal(err)
	}
	if w, err = g.Wrap(&mcp.Tool{Name: "w", InputSchema: schema}, h); err != nil {
		t.Fatal(err)
	}
	return r, w
}

func r61cCall(name string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(`{}`)}}
}

// r61cCode returns the error code of a guard's tool-error result, or "".
func r61cCode(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError || len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	var v struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(tc.Text), &v)
	return v.Error.Code
}

// TestReview61cSinkPanicIntent: an audit sink that panics writing a
// write's intent record (a sink's bug) has not recorded the intent: the
// write is not attempted, as when the sink fails (AUDIT_UNAVAILABLE), and,
// refused before it ran, keeps no charge. The gateway treats a sink's
// panic so (TestReview23SinkPanicReleases). The Guard recovered it as a
// panic of the tool's: the answer INTERNAL "the tool failed unexpectedly",
// the outcome record INTERNAL with detail "panic" (what a handler that
// panicked gets: an operator reads that the tool ran and crashed) and cost
// 1, and the charge kept: the user's next call, a read, was refused
// SPEND_LIMIT_EXCEEDED for a write that never ran.
func TestReview61cSinkPanicIntent(t *testing.T) {
	sink := &r61cPanicSink{panics: func(e *audit.Event) bool { return e.Phase == audit.PhaseIntent }}
	ran := 0
	r, w := r61cGuard(t, sink, &ran)
	res, err := w(context.Background(), r61cCall("w"))
	if err != nil {
		t.Fatal(err)
	}
	if ran != 0 {
		t.Fatalf("the write ran without its intent record")
	}
	if got := r61cCode(res); got != string(mcpguard.CodeAuditUnavailable) {
		t.Errorf("the write whose intent the sink panicked on was refused %q, want AUDIT_UNAVAILABLE (the intent was not recorded)", got)
	}
	var out []audit.Event
	for _, e := range sink.all() {
		if e.Tool == "w" && e.Phase == audit.PhaseOutcome {
			out = append(out, e)
		}
	}
	if len(out) != 1 || out[0].Code != string(mcpguard.CodeAuditUnavailable) || out[0].Detail == "panic" || out[0].Cost != 0 {
		t.Errorf("outcome records of the write: %+v; want one, AUDIT_UNAVAILABLE, cost 0, not the detail of a tool that panicked", out)
	}
	res, err = r(context.Background(), r61cCall("r"))
	if err != nil || res.IsError {
		t.Errorf("the next call, a read, after a write refused before it ran: %v %q; want it run (nothing stays charged)", err, r61cCode(res))
	}
}

// TestReview61cSinkPanicOutcome: an audit sink that panics writing a
// call's outcome record escaped the Guard: its deferred outcome write runs
// after its own recover, so the panic went on up to the go-sdk, which
// recovers none, and ended the server's process; the call got no answer
// and no record. The gateway logs such a panic as the write's failure
// and answers the call.
func TestReview61cSinkPanicOutcome(t *testing.T) {
	sink := &r61cPanicSink{panics: func(e *audit.Event) bool { return e.Phase == audit.PhaseOutcome }}
	ran := 0
	r, w := r61cGuard(t, sink, &ran)
	for _, tc := range []struct {
		name string
		h    mcp.ToolHandler
	}{{"r", r}, {"w", w}} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("call of %s: the sink's panic escaped the guard (it ends a go-sdk server's process): %v", tc.name, v)
				}
			}()
			res, err := tc.h(context.Background(), r61cCall(tc.name))
			if err != nil || res == nil {
				t.Errorf("call of %s: %v %v", tc.name, res, err)
			}
		}()
	}
}

// TestReview61cAuditStepSinkPanic: the stand-alone Audit middleware
// promises that "a failing sink is reported to the log and does not change
// the result". A sink that panics writing the outcome record (a sink's
// bug) changed it: the panic went on up to the Recover outside, which
// answered a write that was made INTERNAL "the tool failed unexpectedly",
// and the call was left with its intent and no outcome record.
func TestReview61cAuditStepSinkPanic(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "w", Class: policy.Write}},
		WriteAllowlist: []string{"w"},
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sink := &r61cPanicSink{panics: func(e *audit.Event) bool { return e.Phase == audit.PhaseOutcome }}
	auditStep, err := mcpguard.Audit(sink, &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	writeAhead, err := mcpguard.WriteAhead(sink, pol, &mcpguard.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	ran := 0
	h := mcpguard.Chain(mcpguard.Recover(log), auditStep, mcpguard.Authenticate(auth), mcpguard.Authorize(pol), writeAhead)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		})
	res, err := h(context.Background(), r61cCall("w"))
	if ran != 1 {
		t.Fatalf("the write ran %d times", ran)
	}
	if err != nil || res == nil || res.IsError {
		t.Errorf("the write was made, but its answer is %q (err %v): a failing sink changed the result", r61cCode(res), err)
	}
}
