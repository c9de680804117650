package confirm_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/confirm"
)

func TestConfirmation(t *testing.T) {
	type env struct {
		h       *harness
		version string
		alice   *mcp.Server
		mallory *mcp.Server
	}
	tests := []struct {
		name string
		args map[string]any
		// action is the human's answer.
		action string
		// during runs inside the elicitation, while the owner's call waits.
		during func(t *testing.T, e env)
		// after runs once the owner's call returned.
		after     func(t *testing.T, e env)
		wantText  string
		wantRan   int32
		wantAudit []string
	}{
		{
			name: "accepted_runs_once", action: "accept",
			wantText: "refunded", wantRan: 1,
			wantAudit: []string{"alice asked", "alice confirmed"},
		},
		{
			name: "declined", action: "decline",
			wantText: "CONFIRMATION_REQUIRED: decline", wantRan: 0,
			wantAudit: []string{"alice asked", "alice not run: decline"},
		},
		{
			name: "cancelled", action: "cancel",
			wantText: "CONFIRMATION_REQUIRED: cancel", wantRan: 0,
			wantAudit: []string{"alice asked", "alice not run: cancel"},
		},
		{
			name: "expired_while_asking", action: "accept",
			during:   func(t *testing.T, e env) { e.h.clock.Advance(confirm.DefaultTTL) },
			wantText: "CONFIRMATION_REQUIRED: confirmation expired", wantRan: 0,
			wantAudit: []string{"alice asked", "alice refused: confirmation expired"},
		},
		{
			name: "slow_but_in_time", action: "accept",
			during:   func(t *testing.T, e env) { e.h.clock.Advance(confirm.DefaultTTL - time.Second) },
			wantText: "refunded", wantRan: 1,
			wantAudit: []string{"alice asked", "alice confirmed"},
		},
		{
			name: "other_caller_replays_state", action: "accept",
			during: func(t *testing.T, e env) {
				res := retry(t, manual(t, e.mallory, e.version), order, e.h.lastState(), "accept")
				if got := text(res); !res.IsError || got != "CONFIRMATION_REQUIRED: confirmation is for another caller, tool or arguments" {
					t.Errorf("mallory's replay: isError=%v %q", res.IsError, got)
				}
			},
			// Mallory's failed attempt did not burn alice's confirmation.
			wantText: "refunded", wantRan: 1,
			wantAudit: []string{"alice asked", "mallory refused: confirmation is for another caller, tool or arguments", "alice confirmed"},
		},
		{
			name: "changed_arguments", action: "accept",
			during: func(t *testing.T, e env) {
				bigger := map[string]any{"customer_id": "CUST-00001", "amount": 1250}
				res := retry(t, manual(t, e.alice, e.version), bigger, e.h.lastState(), "accept")
				if got := text(res); !res.IsError || got != "CONFIRMATION_REQUIRED: confirmation is for another caller, tool or arguments" {
					t.Errorf("retry with changed arguments: isError=%v %q", res.IsError, got)
				}
			},
			wantText: "refunded", wantRan: 1,
			wantAudit: []string{"alice asked", "alice refused: confirmation is for another caller, tool or arguments", "alice confirmed"},
		},
		{
			name: "replayed_after_use", action: "accept",
			after: func(t *testing.T, e env) {
				res := retry(t, manual(t, e.alice, e.version), order, e.h.lastState(), "accept")
				if got := text(res); !res.IsError || got != "CONFIRMATION_REQUIRED: confirmation already used" {
					t.Errorf("replay: isError=%v %q", res.IsError, got)
				}
			},
			wantText: "refunded", wantRan: 1,
			wantAudit: []string{"alice asked", "alice confirmed", "alice refused: confirmation already used"},
		},
		{
			name: "declined_then_replayed_as_accept", action: "decline",
			after: func(t *testing.T, e env) {
				res := retry(t, manual(t, e.alice, e.version), order, e.h.lastState(), "accept")
				if got := text(res); !res.IsError || got != "CONFIRMATION_REQUIRED: confirmation already used" {
					t.Errorf("replay of a declined state: isError=%v %q", res.IsError, got)
				}
			},
			wantText: "CONFIRMATION_REQUIRED: decline", wantRan: 0,
			wantAudit: []string{"alice asked", "alice not run: decline", "alice refused: confirmation already used"},
		},
		{
			name: "model_confirm_argument_is_not_approval", action: "decline",
			args:     map[string]any{"customer_id": "CUST-00001", "amount": 12.5, "confirm": true},
			wantText: "CONFIRMATION_REQUIRED: decline", wantRan: 0,
			wantAudit: []string{"alice asked", "alice not run: decline"},
		},
		{
			name: "forged_state", action: "accept",
			after: func(t *testing.T, e env) {
				st := e.h.lastState()
				forged := st[:len(st)-4] + "AAAA"
				res := retry(t, manual(t, e.alice, e.version), order, forged, "accept")
				if got := text(res); !res.IsError || got != "CONFIRMATION_REQUIRED: confirmation signature invalid" {
					t.Errorf("forged state: isError=%v %q", res.IsError, got)
				}
			},
			wantText: "refunded", wantRan: 1,
			wantAudit: []string{"alice asked", "alice confirmed", "alice refused: confirmation signature invalid"},
		},
	}
	for _, version := range versions {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				h := newHarness(t)
				e := env{h: h, version: version, alice: h.server("alice"), mallory: h.server("mallory")}
				args := tt.args
				if args == nil {
					args = order
				}
				var (
					asked    []string
					received []string
					mu       sync.Mutex
				)
				// The client records what reaches it over the wire, to tell a
				// real elicitation/create round trip from the client-side
				// multi round-trip.
				cs := connectRecording(t, e.alice, version, &received, &mu, func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					if tt.during != nil {
						tt.during(t, e)
					}
					return &mcp.ElicitResult{Action: tt.action}, nil
				})

				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: args})
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				if got := text(res); got != tt.wantText || res.IsError != (tt.wantRan == 0) {
					t.Errorf("CallTool result: isError=%v %q; want %q", res.IsError, got, tt.wantText)
				}
				if res.NeedsInput() {
					t.Errorf("result still needs input after the client answered")
				}
				if tt.after != nil {
					tt.after(t, e)
				}
				if got := h.ran.Load(); got != tt.wantRan {
					t.Errorf("tool ran %d times, want %d", got, tt.wantRan)
				}
				if tt.wantRan == 1 {
					wantArgs, _ := json.Marshal(args)
					h.mu.Lock()
					gotArgs := h.ranArgs[0]
					h.mu.Unlock()
					if diff := cmp.Diff(string(wantArgs), gotArgs); diff != "" {
						t.Errorf("tool ran with other arguments (-want +got):\n%s", diff)
					}
				}
				if diff := cmp.Diff(tt.wantAudit, h.auditLog()); diff != "" {
					t.Errorf("audit (-want +got):\n%s", diff)
				}
				wantAsked := []string{confirm.Describe("refund", mustJSON(t, args))}
				mu.Lock()
				gotAsked, gotReceived := asked, received
				mu.Unlock()
				if diff := cmp.Diff(wantAsked, gotAsked); diff != "" {
					t.Errorf("elicitations shown to the human (-want +got):\n%s", diff)
				}
				var wantReceived []string // 2026-07-28: no server-to-client request
				if version == "2025-11-25" {
					wantReceived = []string{"elicitation/create"}
				}
				if diff := cmp.Diff(wantReceived, gotReceived); diff != "" {
					t.Errorf("requests received by the client (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestManualTwoStep drives the 2026-07-28 multi round-trip by hand: the first
// call returns the elicitation and the state without running the tool; the
// retry carrying the accepting answer runs it.
func TestManualTwoStep(t *testing.T) {
	h := newHarness(t)
	cs := manual(t, h.server("alice"), "2026-07-28")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: order})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("first round: NeedsInput=%v state=%q content=%v; want input request only", res.NeedsInput(), res.RequestState, res.Content)
	}
	ep, ok := res.InputRequests[confirm.InputKey].(*mcp.ElicitParams)
	if !ok {
		t.Fatalf("InputRequests[%q] is %T, want *mcp.ElicitParams", confirm.InputKey, res.InputRequests[confirm.InputKey])
	}
	if want := "Run refund with amount=12.5, customer_id=CUST-00001"; ep.Message != want {
		t.Errorf("elicitation message %q, want %q", ep.Message, want)
	}
	if got := h.ran.Load(); got != 0 {
		t.Fatalf("tool ran %d times before confirmation", got)
	}
	// A retry without an answer is refused, and burns the state.
	noAnswer, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: order, RequestState: res.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(noAnswer); got != "CONFIRMATION_REQUIRED: no answer" {
		t.Errorf("retry without answer: %q", got)
	}
	// Start over: ask again, then accept.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: order})
	if err != nil {
		t.Fatal(err)
	}
	done := retry(t, cs, order, res.RequestState, "accept")
	if done.IsError || text(done) != "refunded" || done.NeedsInput() {
		t.Errorf("accepted retry: isError=%v %q", done.IsError, text(done))
	}
	if got := h.ran.Load(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
}

// TestClientWithoutElicitation: a client that cannot ask a human never gets
// the tool run, on either protocol version.
func TestClientWithoutElicitation(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			h := newHarness(t)
			cs := connect(t, h.server("alice"), version, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: order})
			if err == nil && !res.NeedsInput() {
				t.Errorf("CallTool = %q, nil; want an error or an unanswered input request", text(res))
			}
			if got := h.ran.Load(); got != 0 {
				t.Errorf("tool ran %d times, want 0", got)
			}
		})
	}
}

// TestExpiryWallClock runs the guard on the real clock (time.Now) inside a
// synctest bubble: the human answers after the TTL and is refused; no real
// time passes.
func TestExpiryWallClock(t *testing.T) {
	for _, version := range versions {
		for _, tc := range []struct {
			name  string
			delay time.Duration
			want  string
		}{
			{"answered_in_time", confirm.DefaultTTL - time.Second, "refunded"},
			{"answered_too_late", confirm.DefaultTTL, "CONFIRMATION_REQUIRED: confirmation expired"},
		} {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newHarness(t)
					h.now = time.Now
					var received []string
					var mu sync.Mutex
					cs := connectRecording(t, h.server("alice"), version, &received, &mu,
						func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
							time.Sleep(tc.delay) // the human thinks it over
							return &mcp.ElicitResult{Action: "accept"}, nil
						})
					start := time.Now()
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: order})
					if err != nil {
						t.Fatal(err)
					}
					if got := text(res); got != tc.want {
						t.Errorf("after %v: %q, want %q", tc.delay, got, tc.want)
					}
					if got := time.Since(start); got != tc.delay {
						t.Errorf("bubble time passed %v, want %v", got, tc.delay)
					}
				})
			})
		}
	}
}

// BenchmarkRoundTrip compares a bare tools/call over in-memory transports
// with a confirmed one (two rounds: ask, then the accepted retry) on the
// default protocol.
func BenchmarkRoundTrip(b *testing.B) {
	accept := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	for _, tc := range []struct {
		name    string
		confirm bool
	}{{"bare", false}, {"confirmed", true}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			h := &harness{signer: s, now: time.Now}
			srv := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
			handler := h.refund
			if tc.confirm {
				handler = h.guard("alice", h.refund)
			}
			srv.AddTool(&mcp.Tool{Name: "refund", InputSchema: map[string]any{"type": "object"}}, handler)
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, accept).Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { cs.Close(); ss.Wait() }()
			p := &mcp.CallToolParams{Name: "refund", Arguments: order}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, p)
				if err != nil || res.IsError {
					b.Fatalf("CallTool: %v %v", err, text(res))
				}
			}
		})
	}
}
