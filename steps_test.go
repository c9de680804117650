package mcpguard_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stepPolicy is basePolicy as a *policy.Policy.
func stepPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func must(t *testing.T) func(mcpguard.Middleware, error) mcpguard.Middleware {
	return func(m mcpguard.Middleware, err error) mcpguard.Middleware {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// dryReq is req asking for a dry run.
func dryReq(name, args string) *mcp.CallToolRequest {
	r := req(name, args)
	r.Params.Meta = mcp.Meta{dryrun.MetaKey: true}
	return r
}

func TestStepsConstructorErrors(t *testing.T) {
	p := stepPolicy(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := testSigner(t, nil)
	unknown := &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"no_such_tool": {}}}
	for name, f := range map[string]func() (mcpguard.Middleware, error){
		"confirm nil signer":   func() (mcpguard.Middleware, error) { return mcpguard.Confirm(nil, p, nil) },
		"confirm nil policy":   func() (mcpguard.Middleware, error) { return mcpguard.Confirm(s, nil, nil) },
		"confirm unknown tool": func() (mcpguard.Middleware, error) { return mcpguard.Confirm(s, p, unknown) },
		"limit nil limiter":    func() (mcpguard.Middleware, error) { return mcpguard.Limit(nil, p, nil) },
		"limit nil policy":     func() (mcpguard.Middleware, error) { return mcpguard.Limit(lim, nil, nil) },
		"limit unknown tool":   func() (mcpguard.Middleware, error) { return mcpguard.Limit(lim, p, unknown) },
		"dry run nil policy":   func() (mcpguard.Middleware, error) { return mcpguard.DryRun(nil, nil) },
		"dry run unknown tool": func() (mcpguard.Middleware, error) { return mcpguard.DryRun(p, unknown) },
	} {
		if m, err := f(); err == nil || m != nil {
			t.Errorf("%s: got (%v, %v), want an error", name, m != nil, err)
		}
	}
}

// TestStepsAlone checks what every stand-alone step refuses before its own
// work: no identity in the context (Authenticate did not run), a tool the
// caller may not see (refused exactly as an unknown tool), a tool it may
// see but not call.
func TestStepsAlone(t *testing.T) {
	p := stepPolicy(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := must(t)
	steps := map[string]mcpguard.Middleware{
		"confirm": m(mcpguard.Confirm(testSigner(t, nil), p, &mcpguard.Options{Logger: quiet})),
		"limit":   m(mcpguard.Limit(lim, p, &mcpguard.Options{Logger: quiet})),
		"dry run": m(mcpguard.DryRun(p, &mcpguard.Options{Logger: quiet})),
	}
	for name, step := range steps {
		t.Run(name, func(t *testing.T) {
			var s stub
			res, err := step(s.handle)(context.Background(), req("echo", `{"text":"x"}`))
			if got := codeOf(t, res, err); got != "UNAUTHENTICATED" || s.ran != 0 {
				t.Errorf("without an identity: %s, handler ran %d times", got, s.ran)
			}
			h := mcpguard.Authenticate(fixed(bob))(step(s.handle))
			hidden := codeOfCall(t, h, req("admin_stats", `{}`))
			unknown := codeOfCall(t, h, req("admin_statz", `{}`))
			if hidden != `jsonrpc:unknown tool "admin_stats"` || unknown != `jsonrpc:unknown tool "admin_statz"` || s.ran != 0 {
				t.Errorf("hidden tool: %s, unknown tool: %s, handler ran %d times", hidden, unknown, s.ran)
			}
			if got := codeOfCall(t, h, req("delete_all", `{}`)); got != "WRITE_NOT_ALLOWED" || s.ran != 0 {
				t.Errorf("write off the allowlist: %s, handler ran %d times", got, s.ran)
			}
			if got := codeOfCall(t, h, req("echo", `{"text":"x"}`)); got != "" || s.ran != 1 {
				t.Errorf("allowed read: %q, handler ran %d times", got, s.ran)
			}
		})
	}
}

// codeOfCall calls h with r and returns the code of its answer ("" for
// success).
func codeOfCall(t *testing.T, h mcp.ToolHandler, r *mcp.CallToolRequest) string {
	t.Helper()
	res, err := h(context.Background(), r)
	return codeOf(t, res, err)
}

func TestDryRunStep(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	aware := map[string]mcpguard.ToolOptions{"add_note": {DryRunAware: true}}
	tests := []struct {
		name     string
		opts     *mcpguard.Options
		req      *mcp.CallToolRequest
		wantRan  int
		wantDry  bool // the handler ran with a dry-run context
		wantText bool // the answer is a simulated result
	}{
		{"write asks", nil, dryReq("add_note", `{"text":"x"}`), 0, false, true},
		{"write does not ask", nil, req("add_note", `{"text":"x"}`), 1, false, false},
		{"read asks", nil, dryReq("echo", `{"text":"x"}`), 1, false, false},
		{"every write", &mcpguard.Options{DryRun: true}, req("add_note", `{"text":"x"}`), 0, false, true},
		{"this tool", &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"add_note": {DryRun: true}}}, req("add_note", `{"text":"x"}`), 0, false, true},
		{"aware handler", &mcpguard.Options{Tools: aware}, dryReq("add_note", `{"text":"x"}`), 1, true, false},
		{"aware handler, real call", &mcpguard.Options{Tools: aware}, req("add_note", `{"text":"x"}`), 1, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s stub
			h := mcpguard.Authenticate(fixed(bob))(m(mcpguard.DryRun(p, tt.opts))(s.handle))
			res, err := h(context.Background(), tt.req)
			if err != nil || res.IsError {
				t.Fatalf("refused: %v %s", err, mustJSON(res))
			}
			if s.ran != tt.wantRan {
				t.Fatalf("handler ran %d times, want %d", s.ran, tt.wantRan)
			}
			if s.ran > 0 && dryrun.FromContext(s.ctx) != tt.wantDry {
				t.Errorf("handler's dry-run context = %v, want %v", dryrun.FromContext(s.ctx), tt.wantDry)
			}
			sim := s.ran == 0 && res.StructuredContent != nil
			if sim != tt.wantText {
				t.Errorf("simulated result = %v, want %v: %s", sim, tt.wantText, mustJSON(res))
			}
		})
	}
}

func TestLimitStep(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	t.Run("rate", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var s stub
		h := mcpguard.Authenticate(fixed(bob))(m(mcpguard.Limit(lim, p, nil))(s.handle))
		var codes []string
		for range 3 {
			codes = append(codes, codeOfCall(t, h, req("echo", `{"text":"x"}`)))
		}
		if codes[0] != "" || codes[1] != "" || codes[2] != "RATE_LIMIT_EXCEEDED" || s.ran != 2 {
			t.Errorf("codes %q, handler ran %d times; want two calls, then RATE_LIMIT_EXCEEDED", codes, s.ran)
		}
		// Another user has a budget of its own.
		other := mcpguard.Authenticate(fixed(alice))(m(mcpguard.Limit(lim, p, nil))(s.handle))
		if got := codeOfCall(t, other, req("echo", `{"text":"x"}`)); got != "" {
			t.Errorf("another user: %q", got)
		}
	})
	t.Run("spend", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts := &mcpguard.Options{Tools: map[string]mcpguard.ToolOptions{"add_note": {
			Cost: func(args map[string]any) (float64, error) { return float64(len(args["text"].(string))), nil },
		}}}
		var s stub
		h := mcpguard.Authenticate(fixed(bob))(m(mcpguard.Limit(lim, p, opts))(m(mcpguard.DryRun(p, opts))(s.handle)))
		// Dry runs spend nothing, however many.
		for range 3 {
			if got := codeOfCall(t, h, dryReq("add_note", `{"text":"abcd"}`)); got != "" {
				t.Fatalf("dry run: %q", got)
			}
		}
		if got := codeOfCall(t, h, req("add_note", `{"text":"abcd"}`)); got != "" || s.ran != 1 {
			t.Fatalf("first write (cost 4 of 5): %q, handler ran %d times", got, s.ran)
		}
		if got := codeOfCall(t, h, req("add_note", `{"text":"ab"}`)); got != "SPEND_LIMIT_EXCEEDED" || s.ran != 1 {
			t.Errorf("second write (cost 2, 1 left): %q, handler ran %d times", got, s.ran)
		}
	})
	t.Run("in flight", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		inside, release := make(chan struct{}), make(chan struct{})
		slow := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			inside <- struct{}{}
			<-release
			return textResult("ok"), nil
		}
		h := mcpguard.Authenticate(fixed(bob))(m(mcpguard.Limit(lim, p, nil))(slow))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			h(context.Background(), req("echo", `{"text":"x"}`))
		}()
		<-inside
		if got := codeOfCall(t, h, req("echo", `{"text":"x"}`)); got != "CONCURRENCY_LIMIT_EXCEEDED" {
			t.Errorf("second call in flight: %q", got)
		}
		close(release)
		wg.Wait()
		go func() { <-inside }()
		if got := codeOfCall(t, h, req("echo", `{"text":"x"}`)); got != "" {
			t.Errorf("after the first call returned, its slot is free: %q", got)
		}
	})
}

// confirmRound calls h with the state and answer of a previous round.
func confirmRound(h mcp.ToolHandler, name, args, state, action string) (*mcp.CallToolResult, error) {
	r := req(name, args)
	r.Params.RequestState = state
	if action != "" {
		r.Params.InputResponses = mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: action}}
	}
	return h(context.Background(), r)
}

func TestConfirmStep(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	opts := &mcpguard.Options{Now: func() time.Time { return now }, Logger: quiet}
	var s stub
	h := mcpguard.Authenticate(fixed(bob))(m(mcpguard.Confirm(testSigner(t, nil), p, opts))(s.handle))
	args := `{"target":"db-1"}`

	ask, err := h(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" || ask.InputRequests[confirm.InputKey] == nil || s.ran != 0 {
		t.Fatalf("first round: %v %s, handler ran %d times; want a confirmation request", err, mustJSON(ask), s.ran)
	}
	state := ask.RequestState
	for _, tc := range []struct {
		name, args, action string
		wantRan            int
	}{
		{"other arguments", `{"target":"db-2"}`, "accept", 0},
		{"accepted", args, "accept", 1},
		{"replayed", args, "accept", 1},
	} {
		res, err := confirmRound(h, "wipe", tc.args, state, tc.action)
		if s.ran != tc.wantRan {
			t.Fatalf("%s: handler ran %d times, want %d (%v %s)", tc.name, s.ran, tc.wantRan, err, mustJSON(res))
		}
		if tc.wantRan == 0 || tc.name == "replayed" {
			if got := codeOf(t, res, err); got != "CONFIRMATION_REQUIRED" {
				t.Errorf("%s: %q, want CONFIRMATION_REQUIRED", tc.name, got)
			}
		}
	}
	// A declined confirmation is used up: accepting it later runs nothing.
	ask, err = h(context.Background(), req("wipe", args))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking again: %v %s", err, mustJSON(ask))
	}
	for _, action := range []string{"decline", "accept"} {
		res, err := confirmRound(h, "wipe", args, ask.RequestState, action)
		if got := codeOf(t, res, err); got != "CONFIRMATION_REQUIRED" || s.ran != 1 {
			t.Errorf("%s after a decline: %q, handler ran %d times", action, got, s.ran)
		}
	}
	// Tools without Confirm pass through; a dry run is answered without
	// running the handler (it is not confirmed).
	if got := codeOfCall(t, h, req("add_note", `{"text":"x"}`)); got != "" || s.ran != 2 {
		t.Errorf("a write without Confirm: %q, handler ran %d times", got, s.ran)
	}
	res, err := h(context.Background(), dryReq("wipe", args))
	if err != nil || res.IsError || res.StructuredContent == nil || s.ran != 2 {
		t.Errorf("a dry run: %v %s, handler ran %d times; want a simulated result", err, mustJSON(res), s.ran)
	}
}

// TestConfirmAndLimitCountOnce chains Confirm (with the limiter) and Limit as
// the Guard runs them: a confirmed call counts once against the call rate,
// its asking round included, and its confirmed round spends.
func TestConfirmAndLimitCountOnce(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	opts := &mcpguard.Options{Limiter: lim, Now: func() time.Time { return now }, Logger: quiet}
	var s stub
	h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), m(mcpguard.Confirm(testSigner(t, nil), p, opts)), m(mcpguard.Limit(lim, p, opts)))(s.handle)
	for i := range 2 {
		ask, err := h(context.Background(), req("wipe", `{"target":"db-1"}`))
		if err != nil || ask.RequestState == "" {
			t.Fatalf("call %d: asking round: %v %s", i, err, mustJSON(ask))
		}
		res, err := confirmRound(h, "wipe", `{"target":"db-1"}`, ask.RequestState, "accept")
		if got := codeOf(t, res, err); got != "" || s.ran != i+1 {
			t.Fatalf("call %d: confirmed round: %q, handler ran %d times", i, got, s.ran)
		}
	}
	// Two logical calls used the rate of two: the third is refused when it
	// asks, before the human is bothered.
	res, err := h(context.Background(), req("wipe", `{"target":"db-1"}`))
	if got := codeOf(t, res, err); got != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("third call: %q, want RATE_LIMIT_EXCEEDED: %s", got, mustJSON(res))
	}
}

// TestStepsAnswerTheDryRunsTheyTrust checks that a step that treats a call
// as a dry run (Confirm asks no confirmation for it, Limit charges it no
// spend) answers it as one, whatever runs inside: with the dry-run _meta
// key alone a client would otherwise get a real write past the human or
// the spend cap.
func TestStepsAnswerTheDryRunsTheyTrust(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, step := range map[string]mcpguard.Middleware{
		"confirm": m(mcpguard.Confirm(testSigner(t, nil), p, &mcpguard.Options{Logger: quiet})),
		"limit":   m(mcpguard.Limit(lim, p, &mcpguard.Options{Logger: quiet})),
	} {
		t.Run(name, func(t *testing.T) {
			var s stub
			h := mcpguard.Authenticate(fixed(bob))(step(s.handle))
			tool := map[string]string{"confirm": "wipe", "limit": "add_note"}[name]
			for range 3 {
				res, err := h(context.Background(), dryReq(tool, `{"target":"db-1"}`))
				if err != nil || res.IsError || res.StructuredContent == nil {
					t.Fatalf("dry run: %v %s; want a simulated result", err, mustJSON(res))
				}
			}
			if s.ran != 0 {
				t.Errorf("the handler ran %d times for calls marked as dry runs", s.ran)
			}
		})
	}
}
