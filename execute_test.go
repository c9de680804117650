package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestExecutionStepsAsTheGuard runs the same calls through a Guard (with
// write-ahead intents and an output schema) and through the stand-alone
// chain that ends with WriteAhead and ValidateOutput, and checks that both
// answer alike and leave the same records, intents included: a write gets
// its intent first; a write whose intent cannot be made is refused with
// AUDIT_UNAVAILABLE, does not run and is given back its charge (the next
// write passes a rate cap of two calls); a result its output schema refuses
// becomes INVALID_RESPONSE saying the write may have been made.
func TestExecutionStepsAsTheGuard(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Cost: 2}},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"bad":{"type":"boolean"}}}`)
	out := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	newLim := func() *limiter.Limiter {
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	type path struct {
		sink *intentFailSink
		h    mcp.ToolHandler
		ran  *int
	}
	handler := func(ran *int) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			*ran++
			if strings.Contains(string(req.Params.Arguments), `"bad":true`) {
				return &mcp.CallToolResult{StructuredContent: map[string]any{"id": 7}}, nil
			}
			return &mcp.CallToolResult{StructuredContent: map[string]any{"id": "p-1"}}, nil
		}
	}
	key := []byte("0123456789abcdef")
	opts := func(sink audit.Sink, lim *limiter.Limiter) *mcpguard.Options {
		return &mcpguard.Options{Audit: sink, Limiter: lim, ArgsKey: key, Logger: quiet,
			Tools: map[string]mcpguard.ToolOptions{"pay": {RecordArgs: []string{"amount"}}}}
	}

	guard := path{sink: &intentFailSink{}, ran: new(int)}
	g, err := mcpguard.New(pol, fixed(bob), opts(guard.sink, newLim()))
	if err != nil {
		t.Fatal(err)
	}
	if guard.h, err = g.Wrap(&mcp.Tool{Name: "pay", InputSchema: in, OutputSchema: out}, handler(guard.ran)); err != nil {
		t.Fatal(err)
	}

	chain := path{sink: &intentFailSink{}, ran: new(int)}
	o := opts(nil, nil)
	inV, err := mcpguard.NewValidator(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	outV, err := mcpguard.NewOutputValidator(out)
	if err != nil {
		t.Fatal(err)
	}
	limit, err := mcpguard.Limit(newLim(), pol, o)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := mcpguard.DryRun(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := mcpguard.WriteAhead(chain.sink, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	chain.h = mcpguard.Chain(mcpguard.Recover(quiet), mustAudit(t, chain.sink, o), mcpguard.Authenticate(fixed(bob)),
		mcpguard.Authorize(pol), mcpguard.ValidateArguments(inV), limit, dry, ahead, mcpguard.ValidateOutput(outV))(handler(chain.ran))

	for _, p := range []path{guard, chain} {
		steps := []struct {
			args, code string
			down       bool
		}{
			{`{"amount":1}`, "", false},
			{`{"amount":2}`, "AUDIT_UNAVAILABLE", true},
			{`{"amount":3,"bad":true}`, "INVALID_RESPONSE", false},
			{`{"amount":4}`, "RATE_LIMIT_EXCEEDED", false},
		}
		for i, s := range steps {
			p.sink.down.Store(s.down)
			res, err := p.h(context.Background(), req("pay", s.args))
			if got := codeOf(t, res, err); got != s.code {
				t.Fatalf("call %d: %q, want %q", i, got, s.code)
			}
			if s.code == "INVALID_RESPONSE" {
				raw, _ := json.Marshal(res.StructuredContent)
				if !strings.Contains(string(raw), "may have been made") {
					t.Errorf("malformed write result: %s, want it to say the write may have been made", raw)
				}
			}
		}
		if *p.ran != 2 {
			t.Errorf("handler ran %d times, want 2 (not for the call without an intent)", *p.ran)
		}
	}
	strip := func(evs []audit.Event) []audit.Event {
		for i := range evs {
			evs[i].Time, evs[i].CorrelationID, evs[i].LatencyMS, evs[i].Detail = time.Time{}, "", 0, ""
		}
		return evs
	}
	want, got := strip(guard.sink.all()), strip(chain.sink.all())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chain records differ from the guard's (-guard +chain):\n%s", diff)
	}
	var phases []string
	for _, e := range got {
		phases = append(phases, string(e.Phase)+":"+e.Code)
	}
	wantPhases := []string{"intent:", "outcome:", "outcome:AUDIT_UNAVAILABLE", "intent:", "outcome:INVALID_RESPONSE", "outcome:RATE_LIMIT_EXCEEDED"}
	if diff := cmp.Diff(wantPhases, phases); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	// Each intent shares its outcome's correlation id.
	evs := chain.sink.all()
	if evs[0].CorrelationID != evs[1].CorrelationID || evs[3].CorrelationID != evs[4].CorrelationID || evs[0].CorrelationID == evs[3].CorrelationID {
		t.Errorf("correlation ids %q %q %q %q: want each intent's to be its outcome's", evs[0].CorrelationID, evs[1].CorrelationID, evs[3].CorrelationID, evs[4].CorrelationID)
	}
}

// TestWriteAheadRefusesBadSettings checks WriteAhead's errors.
func TestWriteAheadRefusesBadSettings(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpguard.WriteAhead(nil, pol, nil); err == nil {
		t.Error("nil sink: no error")
	}
	if _, err := mcpguard.WriteAhead(&memSink{}, nil, nil); err == nil {
		t.Error("nil policy: no error")
	}
	if _, err := mcpguard.WriteAhead(&memSink{}, pol, &mcpguard.Options{ArgsKey: []byte("short")}); err == nil {
		t.Error("short ArgsKey: no error")
	}
}

// TestWriteAheadRefusalGivesBackTheCharge: WriteAhead and DryRun apply
// their own policy; a call one of them refuses has not run, so every Limit
// step outside it (two here, as with a shared and a local limiter) gives
// back what it charged: the same limiters then admit another call.
func TestWriteAheadRefusalGivesBackTheCharge(t *testing.T) {
	open, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	shut, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write, Roles: []string{"admin"}}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	newLimit := func() (*limiter.Limiter, mcpguard.Middleware) {
		l, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mcpguard.Limit(l, open, &mcpguard.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return l, m
	}
	ahead, err := mcpguard.WriteAhead(&memSink{}, shut, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := mcpguard.DryRun(shut, &mcpguard.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for name, refuser := range map[string]mcpguard.Middleware{"WriteAhead": ahead, "DryRun": dry} {
		_, outer := newLimit()
		_, inner := newLimit()
		ran := 0
		handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return textResult("paid"), nil
		}
		sink := &memSink{}
		refusing := mcpguard.Chain(mustAudit(t, sink, &mcpguard.Options{Logger: quiet}), mcpguard.Authenticate(fixed(bob)), outer, inner, refuser)(handler)
		res, err := refusing(context.Background(), req("pay", `{}`))
		if got := codeOf(t, res, err); got != "jsonrpc:unknown tool \"pay\"" && got != "FORBIDDEN" {
			t.Fatalf("%s: %q, want the call refused by its policy", name, got)
		}
		if ran != 0 {
			t.Fatalf("%s: the handler ran", name)
		}
		admitting := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), outer, inner)(handler)
		res, err = admitting(context.Background(), req("pay", `{}`))
		if got := codeOf(t, res, err); got != "" {
			t.Errorf("%s: the next call through the same limiters: %q, want it allowed (the refused one was given back its charge)", name, got)
		}
		if evs := sink.all(); len(evs) != 1 || evs[0].Cost != 0 {
			t.Errorf("%s: records %+v, want one with cost 0", name, evs)
		}
	}
}
