package confirm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/confirm"
)

// The protocol versions a guard must serve: the default (multi round-trip
// done by the client) and the handshake-era one (the go-sdk server turns the
// input request into elicitation/create and re-invokes the handler).
var versions = []string{"2026-07-28", "2025-11-25"}

// fakeClock is the time parameter of the guard under test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a confirmation guard wired the way the root package wires it,
// shared by the servers of several authenticated subjects (as replicas
// sharing one signer would be), plus what the tests observe.
type harness struct {
	signer *confirm.Signer
	clock  *fakeClock
	now    func() time.Time // the guard's clock: clock.Now unless replaced

	ran     atomic.Int32 // real tool executions
	rounds  atomic.Int32 // guard invocations
	mu      sync.Mutex
	audit   []string
	ranArgs []string
	issued  []string // states issued, in order
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{signer: s, clock: &fakeClock{now: time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)}}
	h.now = h.clock.Now
	return h
}

func (h *harness) record(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.audit = append(h.audit, fmt.Sprintf(format, args...))
}

func (h *harness) lastState() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.issued) == 0 {
		return ""
	}
	return h.issued[len(h.issued)-1]
}

func (h *harness) auditLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.audit...)
}

func refusal(reason string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(errors.New("CONFIRMATION_REQUIRED: " + reason))
	return res
}

func reason(err error) string {
	for _, e := range []error{confirm.ErrMalformed, confirm.ErrUnknownKey, confirm.ErrBadSignature,
		confirm.ErrExpired, confirm.ErrMismatch, confirm.ErrReplayed, confirm.ErrStore} {
		if errors.Is(err, e) {
			return strings.TrimPrefix(e.Error(), "confirm: ")
		}
	}
	return "unknown"
}

// guard is the confirmation step for one authenticated subject.
func (h *harness) guard(subject string, next mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h.rounds.Add(1)
		p := req.Params
		sum, err := confirm.ArgsSHA256(p.Arguments)
		if err != nil {
			return refusal("invalid arguments"), nil
		}
		c := confirm.Claims{Subject: subject, Tool: p.Name, ArgsSHA256: sum}
		if p.RequestState == "" {
			st, err := h.signer.Issue(h.now(), c)
			if err != nil {
				return refusal("cannot issue"), nil
			}
			h.mu.Lock()
			h.issued = append(h.issued, st)
			h.mu.Unlock()
			h.record("%s asked", subject)
			return confirm.Ask(confirm.Describe(p.Name, p.Arguments), st), nil
		}
		if err := h.signer.Verify(ctx, h.now(), p.RequestState, c); err != nil {
			h.record("%s refused: %s", subject, reason(err))
			return refusal(reason(err)), nil
		}
		action, ok := confirm.Answer(p)
		if !ok {
			h.record("%s refused: no answer", subject)
			return refusal("no answer"), nil
		}
		if action != "accept" {
			h.record("%s not run: %s", subject, action)
			return refusal(action), nil
		}
		h.record("%s confirmed", subject)
		return next(ctx, req)
	}
}

func (h *harness) refund(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h.ran.Add(1)
	h.mu.Lock()
	h.ranArgs = append(h.ranArgs, string(req.Params.Arguments))
	h.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil
}

// server returns a server whose transport authenticated subject.
func (h *harness) server(subject string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
	s.AddTool(&mcp.Tool{Name: "refund", InputSchema: map[string]any{"type": "object"}}, h.guard(subject, h.refund))
	return s
}

// connect connects a new client session to s on the given protocol version.
func connect(t *testing.T, s *mcp.Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// manual returns a session with the automatic multi round-trip disabled, to
// send retries by hand.
func manual(t *testing.T, s *mcp.Server, version string) *mcp.ClientSession {
	t.Helper()
	return connect(t, s, version, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
}

func retry(t *testing.T, cs *mcp.ClientSession, args map[string]any, state, action string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name:           "refund",
		Arguments:      args,
		InputResponses: mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: action}},
		RequestState:   state,
	})
	if err != nil {
		t.Fatalf("manual retry: %v", err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var order = map[string]any{"customer_id": "CUST-00001", "amount": 12.5}

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

// connectRecording connects a client that records the methods of requests
// the server sends it.
func connectRecording(t *testing.T, s *mcp.Server, version string, received *[]string, mu *sync.Mutex,
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "client"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if _, ok := req.GetParams().(*mcp.ElicitParams); ok {
				mu.Lock()
				*received = append(*received, method)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	if got := ss.InitializeParams().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %q, want %q", got, version)
	}
	return cs
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
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
