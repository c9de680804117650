package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReplayedConfirmationChargesNothing checks DESIGN.md step 8 ("a denied
// call consumes nothing") for a confirmation state that was already used:
// the replay is refused CONFIRMATION_REQUIRED at step 7, before the limits,
// so it is charged nothing against the spend cap and a later real call
// still fits in it.
func TestReplayedConfirmationChargesNothing(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Confirm: true, Cost: 10}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 25, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Limiter: lim, Confirmer: testSigner(t, nil), Logger: quiet, Audit: &memSink{}})
	if err != nil {
		t.Fatal(err)
	}
	var s stub
	h, err := g.Wrap(&mcp.Tool{Name: "refund", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	confirmed := func(args string) (state, code string) {
		t.Helper()
		ask, err := h(context.Background(), req("refund", args))
		if err != nil || ask.RequestState == "" {
			t.Fatalf("asking round: %v %s", err, mustJSON(ask))
		}
		res, err := confirmRound(h, "refund", args, ask.RequestState, "accept")
		return ask.RequestState, codeOf(t, res, err)
	}
	// One logical call, confirmed and run: 10 of 25 spent.
	state, code := confirmed(`{"id":"a"}`)
	if code != "" || s.ran != 1 {
		t.Fatalf("first refund: %q, ran %d (test setup)", code, s.ran)
	}
	// The used state sent again: refused, and nothing may be charged.
	res, err := confirmRound(h, "refund", `{"id":"a"}`, state, "accept")
	if got := codeOf(t, res, err); got != "CONFIRMATION_REQUIRED" || s.ran != 1 {
		t.Fatalf("replayed confirmation: %q, ran %d; want CONFIRMATION_REQUIRED and no run (test setup)", got, s.ran)
	}
	// A second real refund: 20 of 25. It must pass.
	if _, code := confirmed(`{"id":"b"}`); code != "" || s.ran != 2 {
		t.Errorf("second refund after a refused replay: %q, ran %d; want success (10+10 <= 25): "+
			"the replay that ran nothing was charged its cost against the spend cap (serve.go charges at step 8, consumes the ticket only after)", code, s.ran)
	}
}

// TestReplayedStateWritesNoIntent checks that a replayed one-time state (a
// used confirmation, or a used sealed multi round-trip state) of a write
// tool is refused at step 7 without a write-ahead intent record: the intent
// says "this write is about to run", and audit readers reconcile intents
// against writes. The confirmed and next rounds count nothing against the
// call rate, so the rate limit (one call per hour here) does not stop
// replays: only the used nonce does.
func TestReplayedStateWritesNoIntent(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "wipe", Class: policy.Write, Confirm: true},
			{Name: "asknote", Class: policy.Write},
		},
		WriteAllowlist: []string{"wipe", "asknote"},
	})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}`)
	args := `{"target":"db-1"}`
	const replays = 3
	for _, tc := range []struct {
		name  string
		tool  string
		round func(h mcp.ToolHandler, state string) (*mcp.CallToolResult, error)
		code  string
		runs  int // handler invocations: each gets one intent
	}{
		{"used_confirmation", "wipe", func(h mcp.ToolHandler, state string) (*mcp.CallToolResult, error) {
			return confirmRound(h, "wipe", args, state, "accept")
		}, "CONFIRMATION_REQUIRED", 1},
		{"used_sealed_state", "asknote", func(h mcp.ToolHandler, state string) (*mcp.CallToolResult, error) {
			return nextRound(h, "asknote", args, state)
		}, "INVALID_ARGUMENTS", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Limiter: lim, Confirmer: testSigner(t, nil), Logger: quiet, Audit: sink})
			if err != nil {
				t.Fatal(err)
			}
			var a asker
			var s stub
			hd := s.handle
			if tc.tool == "asknote" {
				hd = a.handle
			}
			h, err := g.Wrap(&mcp.Tool{Name: tc.tool, InputSchema: schema}, hd)
			if err != nil {
				t.Fatal(err)
			}
			first, err := h(context.Background(), req(tc.tool, args))
			if err != nil || first.RequestState == "" {
				t.Fatalf("first round: %v %s", err, mustJSON(first))
			}
			if res, err := tc.round(h, first.RequestState); codeOf(t, res, err) != "" {
				t.Fatalf("second round: %v %s (test setup)", err, mustJSON(res))
			}
			for i := 0; i < replays; i++ {
				res, err := tc.round(h, first.RequestState)
				if got := codeOf(t, res, err); got != tc.code {
					t.Fatalf("replay %d: %q, want %q (test setup)", i+1, got, tc.code)
				}
			}
			if runs := int64(s.ran) + a.ran.Load(); runs != 1 {
				t.Fatalf("handler finished %d times, want 1 (test setup)", runs)
			}
			var intents []string
			for _, ev := range sink.all() {
				if ev.Phase == audit.PhaseIntent {
					intents = append(intents, ev.CorrelationID)
				}
			}
			if len(intents) != tc.runs {
				t.Errorf("%d write-ahead intent records for %d handler runs and %d refused replays, want %d: "+
					"each replay of a used state passed Check, was admitted by the rate limit (calls 0), "+
					"got a durable intent and only then failed Consume (serve.go: auditIntent before g.consume)", len(intents), tc.runs, replays, tc.runs)
			}
		})
	}
}

// TestReplayRefusalIsRecorded checks the audit record of a replay refused
// at step 7: CONFIRMATION_REQUIRED, with a detail saying the state was used.
func TestReplayRefusalIsRecorded(t *testing.T) {
	sink := &memSink{}
	h, ask, _ := askWipe(t, testSigner(t, nil), sink)
	for i, want := range []string{"", "CONFIRMATION_REQUIRED"} {
		res, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "accept")
		if got := codeOf(t, res, err); got != want {
			t.Fatalf("round %d: %q, want %q", i+1, got, want)
		}
	}
	evs := sink.all()
	last := evs[len(evs)-1]
	if last.Phase != audit.PhaseOutcome || last.Code != "CONFIRMATION_REQUIRED" || !strings.Contains(last.Detail, "already used") {
		t.Errorf("replay's record: phase %q code %q detail %q; want an outcome, CONFIRMATION_REQUIRED, a detail saying the state was used", last.Phase, last.Code, last.Detail)
	}
}

// TestReplayWithoutNonceChecker checks the fallback for a nonce store that
// cannot be asked whether a nonce was used (not a confirm.NonceChecker):
// step 7 lets the replay through and the Consume after the limits still
// refuses it, so it never runs.
func TestReplayWithoutNonceChecker(t *testing.T) {
	mem := confirm.NewMemoryNonceStore()
	signer := testSigner(t, &confirm.Options{Nonces: confirm.NonceStoreFunc(mem.Consume)})
	h, ask, s := askWipe(t, signer, &memSink{})
	for i, want := range []string{"", "CONFIRMATION_REQUIRED", "CONFIRMATION_REQUIRED"} {
		res, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "accept")
		if got := codeOf(t, res, err); got != want {
			t.Errorf("round %d: %q, want %q", i+1, got, want)
		}
	}
	if s.ran != 1 {
		t.Errorf("handler ran %d times, want 1", s.ran)
	}
}

// usedFails is a confirm.NonceChecker whose Used fails.
type usedFails struct{ *confirm.MemoryNonceStore }

func (usedFails) Used(context.Context, string, time.Time, time.Time) (bool, error) {
	return false, errors.New("store down")
}

// TestTicketUsed checks confirm.Ticket.Used's answers: nil for an unused
// state (and it records nothing), ErrReplayed for a used one, ErrExpired,
// ErrStore wrapping the store's error, nil for a used state when the store
// is no NonceChecker, ErrMalformed for the zero Ticket.
func TestTicketUsed(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := confirm.Claims{Subject: "bob", Tool: "wipe", ArgsSHA256: "ab12"}
	ticket := func(t *testing.T, s *confirm.Signer) confirm.Ticket {
		t.Helper()
		st, err := s.Issue(now, c)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := s.Check(now, st, c)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}

	s := testSigner(t, nil)
	tk := ticket(t, s)
	for i := range 2 {
		if err := tk.Used(ctx, now); err != nil {
			t.Fatalf("Used #%d of an unused state = %v, want nil", i+1, err)
		}
	}
	if err := tk.Consume(ctx, now); err != nil {
		t.Fatalf("Consume after Used = %v, want nil", err)
	}
	if err := tk.Used(ctx, now); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("Used after Consume = %v, want ErrReplayed", err)
	}
	if err := ticket(t, s).Used(ctx, now.Add(s.TTL())); !errors.Is(err, confirm.ErrExpired) {
		t.Errorf("Used at expiry = %v, want ErrExpired", err)
	}

	failing := testSigner(t, &confirm.Options{Nonces: usedFails{confirm.NewMemoryNonceStore()}})
	if err := ticket(t, failing).Used(ctx, now); !errors.Is(err, confirm.ErrStore) || !strings.Contains(err.Error(), "store down") {
		t.Errorf("Used with a failing store = %v, want ErrStore wrapping the store's error", err)
	}

	mem := confirm.NewMemoryNonceStore()
	plain := testSigner(t, &confirm.Options{Nonces: confirm.NonceStoreFunc(mem.Consume)})
	tk = ticket(t, plain)
	if err := tk.Consume(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := tk.Used(ctx, now); err != nil {
		t.Errorf("Used of a used state, store no NonceChecker = %v, want nil (Consume decides)", err)
	}
	if err := tk.Consume(ctx, now); !errors.Is(err, confirm.ErrReplayed) {
		t.Errorf("second Consume = %v, want ErrReplayed", err)
	}

	if err := (confirm.Ticket{}).Used(ctx, now); !errors.Is(err, confirm.ErrMalformed) {
		t.Errorf("zero Ticket's Used = %v, want ErrMalformed", err)
	}
}

// TestMemoryNonceStoreUsedClock checks that MemoryNonceStore.Used answers
// by the store's horizon and forgotten expiry as Consume does, and moves
// neither: a nonce expiring no later than one the store forgot counts as
// used even on a clock stepped far back, and a far-ahead clock passed to
// Used does not make later nonces look expired.
func TestMemoryNonceStoreUsedClock(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := confirm.NewMemoryNonceStore()
	consume := func(n string, now, exp time.Time, want bool) {
		t.Helper()
		if first, err := m.Consume(ctx, n, now, exp); err != nil || first != want {
			t.Fatalf("Consume(%s) = %v, %v; want %v, nil", n, first, err, want)
		}
	}
	used := func(n string, now, exp time.Time, want bool) {
		t.Helper()
		if got, err := m.Used(ctx, n, now, exp); err != nil || got != want {
			t.Errorf("Used(%s, now=t0%+v, expires=t0%+v) = %v, %v; want %v, nil", n, now.Sub(t0), exp.Sub(t0), got, err, want)
		}
	}
	consume("a", t0, t0.Add(time.Minute), true)
	consume("b", t0.Add(2*time.Minute), t0.Add(3*time.Minute), true) // forgets a
	used("a", t0.Add(-10*time.Minute), t0.Add(time.Minute), true)    // forgotten, clock stepped back
	used("c", t0.Add(-10*time.Minute), t0.Add(time.Minute), true)    // expires no later than a forgotten one
	used("b", t0.Add(2*time.Minute), t0.Add(3*time.Minute), true)
	used("d", t0.Add(time.Hour), t0.Add(time.Hour+time.Minute), false) // far ahead: must not move the horizon
	used("e", t0.Add(2*time.Minute), t0.Add(2*time.Minute+30*time.Second), false)
	consume("e", t0.Add(2*time.Minute), t0.Add(2*time.Minute+30*time.Second), true)
	used("e", t0.Add(2*time.Minute), t0.Add(2*time.Minute+30*time.Second), true)
	if n := m.Len(); n != 2 {
		t.Errorf("Len = %d, want 2 (b, e): Used records nothing", n)
	}
}

// askWipe wraps a stub as the write tool "wipe", which needs confirmation,
// in a Guard with signer and sink, and makes the asking round of a call.
// It returns the wrapped handler, the asking round's result and the stub.
func askWipe(t *testing.T, signer *confirm.Signer, sink *memSink) (mcp.ToolHandler, *mcp.CallToolResult, *stub) {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"wipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Confirmer: signer, Logger: quiet, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	s := &stub{}
	h, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	ask, err := h(context.Background(), req("wipe", `{}`))
	if err != nil || ask.RequestState == "" {
		t.Fatalf("asking round: %v %s", err, mustJSON(ask))
	}
	return h, ask, s
}
