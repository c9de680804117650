package confirm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
)

// Review 25b: the confirmation flows attacked as the model or a compromised
// client would, on the multi round-trip (2026-07-28) and on older clients,
// against the flow doc.go describes (the harness guard) and the Guard.

// r25bRetry sends one manual round with the given state and responses.
func r25bRetry(t *testing.T, cs *mcp.ClientSession, tool string, args any, state string, resp mcp.InputResponseMap) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: tool, Arguments: args, RequestState: state, InputResponses: resp,
	})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

func r25bAnswer(action string) mcp.InputResponseMap {
	return mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: action}}
}

// r25bAsk runs the first round by hand and returns its state.
func r25bAsk(t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res := r25bRetry(t, cs, tool, args, "", nil)
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first round of %s: NeedsInput=%v state=%q %s", tool, res.NeedsInput(), res.RequestState, text(res))
	}
	return res.RequestState
}

// TestReview25bAnswerReadsOnlyTheConfirmation: Answer reads the elicitation
// result under InputKey as the go-sdk decodes it off the wire, and nothing
// else: an answer under another input request's id, one the go-sdk decodes
// as another kind of response, or an action in another spelling is no
// answer; extra keys and content nobody asked for change nothing.
func TestReview25bAnswerReadsOnlyTheConfirmation(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   string
		wantOK bool
	}{
		{"accept", `{"inputResponses":{"mcpguard.confirm":{"action":"accept"}}}`, "accept", true},
		{"other_request_id", `{"inputResponses":{"confirm":{"action":"accept"},"mcpguard.Confirm":{"action":"accept"}}}`, "", false},
		{"accept_with_content", `{"inputResponses":{"mcpguard.confirm":{"action":"accept","content":{"amount":1000,"confirm":true}}}}`, "accept", true},
		{"decline_with_content", `{"inputResponses":{"mcpguard.confirm":{"action":"decline","content":{"ok":true}}}}`, "decline", true},
		{"roots_key_makes_it_roots", `{"inputResponses":{"mcpguard.confirm":{"action":"accept","roots":[]}}}`, "", false},
		{"null_action", `{"inputResponses":{"mcpguard.confirm":{"action":null}}}`, "", false},
		{"action_not_a_string", `{"inputResponses":{"mcpguard.confirm":{"action":["accept"]}}}`, "", false},
		{"upper_case_value", `{"inputResponses":{"mcpguard.confirm":{"action":"Accept"}}}`, "", false},
		{"padded_value", `{"inputResponses":{"mcpguard.confirm":{"action":"accept "}}}`, "", false},
		{"state_only", `{"requestState":"x"}`, "", false},
		{"model_arguments", `{"arguments":{"confirm":true,"inputResponses":{"mcpguard.confirm":{"action":"accept"}}}}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p mcp.CallToolParamsRaw
			if err := json.Unmarshal([]byte(tt.params), &p); err != nil {
				if tt.wantOK {
					t.Fatalf("unmarshal %s: %v", tt.params, err)
				}
				return // the go-sdk refuses the request: no answer either
			}
			got, ok := confirm.Answer(&p)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Answer(%s) = %q, %v; want %q, %v", tt.params, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestReview25bDocFlowAttacks drives the flow doc.go describes (the harness
// guard: Verify, then Answer) by hand on both protocol versions: every
// reuse of a state for something it was not issued for is refused, and
// the tool runs once, with the arguments the human was shown.
func TestReview25bDocFlowAttacks(t *testing.T) {
	other := map[string]any{"customer_id": "CUST-00001", "amount": 1250}
	tests := []struct {
		name string
		// attack runs with the state alice was issued for order; it
		// returns the refusal it expects.
		attack  func(t *testing.T, h *harness, alice, mallory *mcp.ClientSession, st string) *mcp.CallToolResult
		want    string
		wantRan int32
	}{
		{"answer_for_other_request_id", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, alice, "refund", order, st, mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}})
		}, "CONFIRMATION_REQUIRED: no answer", 0},
		{"other_arguments", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, alice, "refund", other, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation is for another caller, tool or arguments", 0},
		{"other_tool", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, alice, "refund_all", order, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation is for another caller, tool or arguments", 0},
		{"other_user", func(t *testing.T, h *harness, _, mallory *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, mallory, "refund", order, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation is for another caller, tool or arguments", 0},
		{"decline_then_accept", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			if got := text(r25bRetry(t, alice, "refund", order, st, r25bAnswer("decline"))); got != "CONFIRMATION_REQUIRED: decline" {
				t.Errorf("decline: %q", got)
			}
			return r25bRetry(t, alice, "refund", order, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation already used", 0},
		{"cancel_then_accept", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			if got := text(r25bRetry(t, alice, "refund", order, st, r25bAnswer("cancel"))); got != "CONFIRMATION_REQUIRED: cancel" {
				t.Errorf("cancel: %q", got)
			}
			return r25bRetry(t, alice, "refund", order, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation already used", 0},
		{"answer_without_state_asks_again", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			res := r25bRetry(t, alice, "refund", order, "", r25bAnswer("accept"))
			if !res.NeedsInput() || res.RequestState == "" || res.RequestState == st {
				t.Errorf("accept without a state: NeedsInput=%v, new state %v", res.NeedsInput(), res.RequestState != st)
			}
			return refusal("asked again")
		}, "CONFIRMATION_REQUIRED: asked again", 0},
		{"accepted_twice", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			if got := text(r25bRetry(t, alice, "refund", order, st, r25bAnswer("accept"))); got != "refunded" {
				t.Errorf("first accept: %q", got)
			}
			return r25bRetry(t, alice, "refund", order, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation already used", 1},
		{"content_is_not_arguments", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			resp := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"amount": 1250}}}
			if got := text(r25bRetry(t, alice, "refund", order, st, resp)); got != "refunded" {
				t.Errorf("accept with content: %q", got)
			}
			return refusal("ran")
		}, "CONFIRMATION_REQUIRED: ran", 1},
		{"state_from_a_removed_key", func(t *testing.T, h *harness, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			s2, err := confirm.NewSigner([]confirm.Key{{ID: "k2", Secret: []byte("fedcba9876543210fedcba9876543210")}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.signer = s2 // k1 rotated out
			return r25bRetry(t, alice, "refund", order, st, r25bAnswer("accept"))
		}, "CONFIRMATION_REQUIRED: confirmation signed with an unknown key", 0},
	}
	for _, version := range versions {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				h := newHarness(t)
				srv := func(subject string) *mcp.Server {
					s := h.server(subject)
					s.AddTool(&mcp.Tool{Name: "refund_all", InputSchema: map[string]any{"type": "object"}}, h.guard(subject, h.refund))
					return s
				}
				alice := manual(t, srv("alice"), "2026-07-28")
				mallory := manual(t, srv("mallory"), version)
				st := r25bAsk(t, alice, "refund", order)
				res := tt.attack(t, h, alice, mallory, st)
				if got := text(res); !res.IsError || got != tt.want {
					t.Errorf("isError=%v %q; want %q", res.IsError, got, tt.want)
				}
				if got := h.ran.Load(); got != tt.wantRan {
					t.Errorf("tool ran %d times, want %d", got, tt.wantRan)
				}
				wantArgs, _ := json.Marshal(order)
				h.mu.Lock()
				for _, a := range h.ranArgs {
					if a != string(wantArgs) {
						t.Errorf("tool ran with %s, want %s", a, wantArgs)
					}
				}
				h.mu.Unlock()
			})
		}
	}
}

// TestReview25bDocFlowConcurrentRetries: the same accepted retry sent many
// times at once runs the tool once (doc.go: Consume is authoritative).
func TestReview25bDocFlowConcurrentRetries(t *testing.T) {
	h := newHarness(t)
	s := h.server("alice")
	st := r25bAsk(t, manual(t, s, "2026-07-28"), "refund", order)
	const n = 16
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = manual(t, s, "2026-07-28")
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for _, cs := range sessions {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "refund", Arguments: order, RequestState: st, InputResponses: r25bAnswer("accept"),
			})
			if err == nil && !res.IsError {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || h.ran.Load() != 1 {
		t.Errorf("%d retries succeeded, tool ran %d times; want 1 and 1", ok.Load(), h.ran.Load())
	}
}

// TestReview25bSplitDeclineConsumes: doc.go's split of Verify (Check, Used,
// Consume "once the call is admitted"): a decline or a cancel must use the
// state up too, or the client replays the declined state with "accept".
// This follows the doc's guard through both answers with a store that
// tells used states (a NonceChecker) and with one that does not.
func TestReview25bSplitDeclineConsumes(t *testing.T) {
	now := time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	mem := confirm.NewMemoryNonceStore()
	stores := map[string]confirm.NonceStore{
		"checker":     confirm.NewMemoryNonceStore(),
		"not_checker": confirm.NonceStoreFunc(mem.Consume),
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, &confirm.Options{Nonces: store})
			if err != nil {
				t.Fatal(err)
			}
			sum, _ := confirm.ArgsSHA256(json.RawMessage(`{"a":1}`))
			c := confirm.Claims{Subject: "alice", Tool: "wipe", ArgsSHA256: sum}
			ran := 0
			// round is a guard that splits Verify as doc.go says.
			round := func(st, action string) error {
				tk, err := s.Check(now, st, c)
				if err != nil {
					return err
				}
				if err := tk.Used(context.Background(), now); err != nil {
					return err
				}
				p := &mcp.CallToolParamsRaw{InputResponses: r25bAnswer(action)}
				a, _ := confirm.Answer(p)
				if err := tk.Consume(context.Background(), now); err != nil {
					return err // admitted or declined: used up either way
				}
				if a == "accept" {
					ran++
				}
				return nil
			}
			for _, first := range []string{"decline", "cancel"} {
				st, err := s.Issue(now, c)
				if err != nil {
					t.Fatal(err)
				}
				if err := round(st, first); err != nil {
					t.Fatalf("%s: %v", first, err)
				}
				if err := round(st, "accept"); !errors.Is(err, confirm.ErrReplayed) {
					t.Errorf("accept after %s: %v, want ErrReplayed", first, err)
				}
			}
			if ran != 0 {
				t.Errorf("ran %d times, want 0", ran)
			}
		})
	}
}

// r25bGuard is a Guard in front of two confirmed write tools, for one
// subject, sharing signer with the other subjects' servers.
type r25bGuard struct {
	signer *confirm.Signer
	step   bool // the stand-alone Confirm step instead of a Guard
	ran    atomic.Int32
	mu     sync.Mutex
	seen   []string // what the handler got: arguments, state, responses
}

func (r *r25bGuard) server(t *testing.T, subject string) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if !r.step {
		for _, name := range []string{"wipe", "drop"} {
			srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)}, r.handler(t))
		}
	}
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "wipe", Class: policy.Write, Confirm: true},
			{Name: "drop", Class: policy.Write, Confirm: true},
		},
		WriteAllowlist: []string{"wipe", "drop"},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := &mcpguard.Identity{Principal: &policy.Principal{Subject: subject}}
	if r.step {
		mw, err := mcpguard.Confirm(r.signer, pol, &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		for _, name := range []string{"wipe", "drop"} {
			h := mw(r.handler(t))
			srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return h(mcpguard.NewContext(ctx, id), req)
				})
		}
		return srv
	}
	authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return id, nil
	})
	g, err := mcpguard.New(pol, authn, &mcpguard.Options{
		Confirmer: r.signer,
		Audit:     audit.SinkFunc(func(context.Context, *audit.Event) error { return nil }),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return srv
}

// handler is the guarded write: it records what it got.
func (r *r25bGuard) handler(t *testing.T) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r.ran.Add(1)
		r.mu.Lock()
		r.seen = append(r.seen, string(req.Params.Arguments)+"|"+req.Params.RequestState+"|"+string(mustJSON(t, req.Params.InputResponses)))
		r.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
	}
}

func r25bCode(res *mcp.CallToolResult) string {
	if !res.IsError {
		return ""
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(text(res)), &e); err != nil || e.Error.Code == "" {
		return text(res)
	}
	return e.Error.Code
}

// TestReview25bGuardAttacks: the same attacks against the Guard's step 7,
// on the multi round-trip, and with the second round sent by an older
// client (which carries a state it captured). Only the one accepted round
// with alice's own state, tool and arguments runs, once, and the handler
// sees neither the state nor the answers.
func TestReview25bGuardAttacks(t *testing.T) {
	args := map[string]any{"target": "db-1"}
	tests := []struct {
		name    string
		attack  func(t *testing.T, alice, bob *mcp.ClientSession, st string) *mcp.CallToolResult
		wantRan int32
	}{
		{"answer_for_other_request_id", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, alice, "wipe", args, st, mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}})
		}, 0},
		{"other_arguments", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, alice, "wipe", map[string]any{"target": "db-2"}, st, r25bAnswer("accept"))
		}, 0},
		{"other_tool", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, alice, "drop", args, st, r25bAnswer("accept"))
		}, 0},
		{"other_user", func(t *testing.T, _, bob *mcp.ClientSession, st string) *mcp.CallToolResult {
			return r25bRetry(t, bob, "wipe", args, st, r25bAnswer("accept"))
		}, 0},
		{"decline_then_accept", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			r25bRetry(t, alice, "wipe", args, st, r25bAnswer("decline"))
			return r25bRetry(t, alice, "wipe", args, st, r25bAnswer("accept"))
		}, 0},
		{"cancel_then_accept", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			r25bRetry(t, alice, "wipe", args, st, r25bAnswer("cancel"))
			return r25bRetry(t, alice, "wipe", args, st, r25bAnswer("accept"))
		}, 0},
		{"accepted_twice", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			if res := r25bRetry(t, alice, "wipe", args, st, r25bAnswer("accept")); res.IsError {
				t.Errorf("first accept refused: %s", text(res))
			}
			return r25bRetry(t, alice, "wipe", args, st, r25bAnswer("accept"))
		}, 1},
		{"bad_action_then_accept", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			// No answer uses nothing up: the human may still answer.
			if got := r25bCode(r25bRetry(t, alice, "wipe", args, st, r25bAnswer("ACCEPT"))); got != "CONFIRMATION_REQUIRED" {
				t.Errorf("ACCEPT: %q", got)
			}
			if got := r25bCode(r25bRetry(t, alice, "wipe", args, st, nil)); got != "CONFIRMATION_REQUIRED" {
				t.Errorf("no responses: %q", got)
			}
			resp := mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"target": "db-2"}}}
			if res := r25bRetry(t, alice, "wipe", args, st, resp); res.IsError {
				t.Errorf("accept after no answer: %s", text(res))
			}
			return r25bRetry(t, alice, "wipe", args, st, r25bAnswer("accept"))
		}, 1},
		{"huge_responses", func(t *testing.T, alice, _ *mcp.ClientSession, st string) *mcp.CallToolResult {
			resp := r25bAnswer("decline")
			for i := range 2000 {
				resp[strings.Repeat("k", i+1)] = &mcp.ElicitResult{Action: "accept"}
			}
			deep := any("x")
			for range 500 {
				deep = map[string]any{"a": deep}
			}
			resp["deep"] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"d": deep}}
			r25bRetry(t, alice, "wipe", args, st, resp)
			return r25bRetry(t, alice, "wipe", args, st, r25bAnswer("accept"))
		}, 0},
	}
	for _, step := range []bool{false, true} {
		for _, version := range versions {
			for _, tt := range tests {
				t.Run(map[bool]string{false: "guard", true: "step"}[step]+"/"+version+"/"+tt.name, func(t *testing.T) {
					signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
					if err != nil {
						t.Fatal(err)
					}
					r := &r25bGuard{signer: signer, step: step}
					asker := manual(t, r.server(t, "alice"), "2026-07-28")
					st := r25bAsk(t, asker, "wipe", args)
					alice := manual(t, r.server(t, "alice"), version)
					bob := manual(t, r.server(t, "bob"), version)
					res := tt.attack(t, alice, bob, st)
					if got := r25bCode(res); got != "CONFIRMATION_REQUIRED" {
						t.Errorf("last round: code %q, want CONFIRMATION_REQUIRED: %s", got, text(res))
					}
					if got := r.ran.Load(); got != tt.wantRan {
						t.Errorf("tool ran %d times, want %d", got, tt.wantRan)
					}
					r.mu.Lock()
					defer r.mu.Unlock()
					for _, s := range r.seen {
						if diff := cmp.Diff(`{"target":"db-1"}||null`, s); diff != "" {
							t.Errorf("handler got (-want +got):\n%s", diff)
						}
					}
				})
			}
		}
	}
}

// TestReview25bGuardConcurrentRetries: the same accepted retry sent many
// times at once, on as many sessions, runs the write once.
func TestReview25bGuardConcurrentRetries(t *testing.T) {
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &r25bGuard{signer: signer}
	srv := r.server(t, "alice")
	args := map[string]any{"target": "db-1"}
	st := r25bAsk(t, manual(t, srv, "2026-07-28"), "wipe", args)
	const n = 16
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = manual(t, srv, versions[i%2])
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	start := make(chan struct{})
	for _, cs := range sessions {
		wg.Go(func() {
			<-start
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "wipe", Arguments: args, RequestState: st, InputResponses: r25bAnswer("accept"),
			})
			if err == nil && !res.IsError {
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || r.ran.Load() != 1 {
		t.Errorf("%d retries succeeded, tool ran %d times; want 1 and 1", ok.Load(), r.ran.Load())
	}
}
