package mcpguard_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func answer(action string, asked *atomic.Int64) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: action}, nil
	}
}

func TestConfirmationRoundTrip(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			for _, tc := range []struct {
				action   string
				wantRuns int64
				wantCode string
			}{
				{"accept", 1, ""},
				{"decline", 0, "CONFIRMATION_REQUIRED"},
				{"cancel", 0, "CONFIRMATION_REQUIRED"},
			} {
				t.Run(tc.action, func(t *testing.T) {
					h := newHarness(t, basePolicy(false), nil)
					var asked atomic.Int64
					cs := h.connect(bob, clientOpts{version: v, elicit: answer(tc.action, &asked)})
					res, err := call(t, cs, "wipe", map[string]any{"target": "db-1", "confirm": true})
					if err == nil && errorCode(t, res) != "INVALID_ARGUMENTS" {
						t.Fatalf("a model-supplied confirm argument was not refused: %s", mustJSON(res))
					}
					res, err = call(t, cs, "wipe", map[string]any{"target": "db-1"})
					if err != nil {
						t.Fatal(err)
					}
					if got := errorCode(t, res); got != tc.wantCode {
						t.Errorf("code = %q, want %q: %s", got, tc.wantCode, mustJSON(res))
					}
					if n := asked.Load(); n != 1 {
						t.Errorf("user asked %d times, want 1", n)
					}
					if n := h.down.calls.Load(); n != tc.wantRuns {
						t.Errorf("tool ran %d times, want %d", n, tc.wantRuns)
					}
				})
			}
		})
	}
}

// TestConfirmationFailureModes drives the second round by hand with states
// from the guard's own signer, as an attacker who captured one would.
func TestConfirmationFailureModes(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hash := func(args string) string {
		h, err := confirm.ArgsSHA256(json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	accept := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
	tests := []struct {
		name     string
		issuedAt time.Time
		claims   confirm.Claims
		args     string
		resp     mcp.InputResponseMap
		twice    bool
		wantRuns int64
	}{
		{"valid", now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, accept, false, 1},
		{"replayed", now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, accept, true, 1},
		{"expired", now.Add(-3 * time.Minute), confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, accept, false, 0},
		{"changed_arguments", now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-2"}`, accept, false, 0},
		{"other_caller", now, confirm.Claims{Subject: "alice", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, accept, false, 0},
		{"other_tool", now, confirm.Claims{Subject: "bob", Tool: "add_note", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, accept, false, 0},
		{"declined", now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "decline"}}, false, 0},
		{"no_answer", now, confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: hash(`{"target":"db-1"}`)}, `{"target":"db-1"}`, nil, false, 0},
	}
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					signer := testSigner(t, nil)
					h := newHarness(t, basePolicy(false), &mcpguard.Options{Confirmer: signer, Now: func() time.Time { return now }})
					cs := h.connect(bob, clientOpts{version: v, noMRTR: true})
					state, err := signer.Issue(tt.issuedAt, tt.claims)
					if err != nil {
						t.Fatal(err)
					}
					rounds := 1
					if tt.twice {
						rounds = 2
					}
					var last *mcp.CallToolResult
					for range rounds {
						last, err = cs.CallTool(context.Background(), &mcp.CallToolParams{
							Name: "wipe", Arguments: json.RawMessage(tt.args), RequestState: state, InputResponses: tt.resp,
						})
						if err != nil {
							t.Fatal(err)
						}
					}
					if n := h.down.calls.Load(); n != tt.wantRuns {
						t.Errorf("tool ran %d times, want %d", n, tt.wantRuns)
					}
					wantCode := "CONFIRMATION_REQUIRED"
					if tt.wantRuns == 1 && !tt.twice {
						wantCode = ""
					}
					if got := errorCode(t, last); got != wantCode {
						t.Errorf("last code = %q, want %q: %s", got, wantCode, mustJSON(last))
					}
					// Every attempt is audited.
					if n := len(eventsFor(h.sink.all(), "wipe")); n != rounds {
						t.Errorf("%d outcome events, want %d", n, rounds)
					}
				})
			}
		})
	}
}

// TestConfirmationFirstRoundNeedsInput checks the wire shape of the first
// round on the new protocol: an input-required result, no content.
func TestConfirmationFirstRoundNeedsInput(t *testing.T) {
	h := newHarness(t, basePolicy(false), nil)
	cs := h.connect(bob, clientOpts{noMRTR: true})
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || res.InputRequests[confirm.InputKey] == nil {
		t.Fatalf("first round = %s, want an input-required result", mustJSON(res))
	}
	ep := res.InputRequests[confirm.InputKey].(*mcp.ElicitParams)
	if want := "db-1"; !contains(ep.Message, want) {
		t.Errorf("prompt %q does not state the action (want %q in it)", ep.Message, want)
	}
	if h.down.calls.Load() != 0 {
		t.Error("tool ran before confirmation")
	}
}

// TestConfirmationCountsOnce checks that the two rounds of one logical call
// count once against the rate limit.
func TestConfirmationCountsOnce(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim})
			var asked atomic.Int64
			cs := h.connect(bob, clientOpts{version: v, elicit: answer("accept", &asked)})
			for i := range 2 {
				res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
				if err != nil || res.IsError {
					t.Fatalf("confirmed call %d: %v %s", i, err, mustJSON(res))
				}
			}
			res, _ := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			if got := errorCode(t, res); got != "RATE_LIMIT_EXCEEDED" {
				t.Errorf("third logical call = %q, want RATE_LIMIT_EXCEEDED", got)
			}
			if n := h.down.calls.Load(); n != 2 {
				t.Errorf("tool ran %d times, want 2", n)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestConfirmationSlowHumanExpires: on an older client the human answers
// inside the call; an answer after the state's expiry must not run the tool.
func TestConfirmationSlowHumanExpires(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	h := newHarness(t, basePolicy(false), &mcpguard.Options{Now: now})
	slow := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		clock.Add(int64(3 * time.Minute))
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	cs := h.connect(bob, clientOpts{version: "2025-11-25", elicit: slow})
	res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorCode(t, res); got != "CONFIRMATION_REQUIRED" {
		t.Errorf("late answer: code %q, want CONFIRMATION_REQUIRED", got)
	}
	if n := h.down.calls.Load(); n != 0 {
		t.Errorf("tool ran %d times after a late confirmation", n)
	}
}

// TestDryRunAndConfirmationCharges: a dry run counts against the call rate
// but not the spend cap; a confirmed call charges its spend once.
func TestDryRunAndConfirmationCharges(t *testing.T) {
	cost := map[string]mcpguard.ToolOptions{
		"add_note": {Cost: func(map[string]any) (float64, error) { return 6, nil }},
		"wipe":     {Cost: func(map[string]any) (float64, error) { return 6, nil }},
	}
	t.Run("dry_run_spends_nothing", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{
			{Kind: limiter.Rate, Scope: limiter.User, Max: 3, Window: time.Hour},
			{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim, DryRun: true, Tools: cost})
		cs := h.connect(bob, clientOpts{})
		var codes []string
		for range 4 { // 4 dry runs of cost 6: spend would refuse the second, the rate refuses the fourth
			res, err := call(t, cs, "add_note", map[string]any{"title": "x"})
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, errorCode(t, res))
		}
		if diff := cmp.Diff([]string{"", "", "", "RATE_LIMIT_EXCEEDED"}, codes); diff != "" {
			t.Errorf("codes (-want +got):\n%s", diff)
		}
	})
	for _, v := range protocolVersions {
		t.Run("confirmed_call_spends_once/"+versionName(v), func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 10, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, basePolicy(false), &mcpguard.Options{Limiter: lim, Tools: cost})
			var asked atomic.Int64
			cs := h.connect(bob, clientOpts{version: v, elicit: answer("accept", &asked)})
			res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			if err != nil || res.IsError {
				t.Fatalf("first confirmed call (cost 6 of 10): %v %s", err, mustJSON(res))
			}
			res, _ = call(t, cs, "wipe", map[string]any{"target": "db-2"})
			if got := errorCode(t, res); got != "SPEND_LIMIT_EXCEEDED" {
				t.Errorf("second call (6 more) = %q, want SPEND_LIMIT_EXCEEDED", got)
			}
			if n := h.down.calls.Load(); n != 1 {
				t.Errorf("tool ran %d times, want 1", n)
			}
		})
	}
}
