package mcpguard_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// TestReview9InnerLimitRefusalKeepsOuterCharge: two Limit steps compose
// (a shared limiter and a local one; execute.go's limitCtx.outer and
// refundAdmissions walk every Limit step outside a refusing WriteAhead or
// DryRun). A user expects a call refused by the inner Limit step, whose
// handler never runs, to consume nothing in the outer one ("a refused call
// consumes nothing", Options.Limiter; a denied call takes nothing from any
// limit, limiter doc). Instead the inner Limit step's refusal (steps.go,
// Limit: `return g.deny(c, d)` after charge, and likewise after a failed
// consume, which refunds only its own decision) leaves the outer step's
// charge in place: a call of a tool the inner limiter always refuses uses
// up the caller's outer rate, and their next call, of any tool, is refused
// with RATE_LIMIT_EXCEEDED although no call ever ran.
func TestReview9InnerLimitRefusalKeepsOuterCharge(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "search", Class: policy.Read},
			{Name: "bulk", Class: policy.Read, Cost: 10},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Outer: one call per hour per user. Inner: 5 spend units per hour per
	// user, which a "bulk" call (cost 10) always exceeds.
	outerLim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	innerLim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 5, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// bulk's cost comes from a Cost function: a fixed Cost above the
	// inner limit's Max is refused by Limit (no call could ever pass).
	o := &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tools: map[string]mcpguard.ToolOptions{"bulk": {Cost: func(map[string]any) (float64, error) { return 10, nil }}}}
	outer, err := mcpguard.Limit(outerLim, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := mcpguard.Limit(innerLim, pol, o)
	if err != nil {
		t.Fatal(err)
	}
	id := &mcpguard.Identity{Principal: &policy.Principal{Subject: "carol", Roles: []string{"user"}}}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return id, nil })
	ran := 0
	h := mcpguard.Chain(mcpguard.Authenticate(auth), mcpguard.Authorize(pol), outer, inner)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	call := func(tool string) string {
		t.Helper()
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(`{}`)}})
		if err != nil {
			return "error: " + err.Error()
		}
		var de *mcpguard.DenialError
		if errors.As(res.GetError(), &de) {
			return string(de.Code)
		}
		if res.IsError {
			return "tool error"
		}
		return ""
	}
	if got := call("bulk"); got != string(mcpguard.CodeSpendLimitExceeded) {
		t.Fatalf("bulk: %q, want SPEND_LIMIT_EXCEEDED from the inner limiter", got)
	}
	if ran != 0 {
		t.Fatalf("handler ran %d times for a refused call", ran)
	}
	if got := call("search"); got != "" {
		t.Errorf("search after a refused bulk call: %q, want it allowed (the refused call ran nowhere and should have consumed nothing in the outer limiter)", got)
	}
}

// failFirst is a nonce source whose first read fails (an exhausted entropy
// source, an HSM that hiccups), then reads crypto/rand.
type failFirst struct{ reads int }

func (f *failFirst) Read(p []byte) (int, error) {
	f.reads++
	if f.reads == 1 {
		return 0, errors.New("entropy source unavailable")
	}
	return rand.Read(p)
}

// TestReview9ConfirmIssueFailureKeepsCharge: Options.Limiter says "a call
// the limiter admitted and that is refused before its handler runs ... is
// given back its calls and cost: a refused call consumes nothing". The
// first round of a confirmed tool is charged one call before the human is
// asked (serve.go confirmStep: g.limit then Release), and then, when the
// confirmation state cannot be issued (s.Issue fails: the nonce source, or
// claims too long for a state), the call is refused with INTERNAL without
// any Refund, although no human was asked and nothing ran. The user, told
// to try again, is refused with RATE_LIMIT_EXCEEDED for the rest of the
// window. (The same holds when the elicitation of an older client fails.)
func TestReview9ConfirmIssueFailureKeepsCharge(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"pay"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, &confirm.Options{Rand: &failFirst{}})
	if err != nil {
		t.Fatal(err)
	}
	id := &mcpguard.Identity{Principal: &policy.Principal{Subject: "dave", Roles: []string{"user"}}}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return id, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Limiter:   lim,
		Confirmer: signer,
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h, err := g.Wrap(&mcp.Tool{Name: "pay", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	call := func() (string, *mcp.CallToolResult) {
		t.Helper()
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(`{}`)}})
		if err != nil {
			return "error: " + err.Error(), nil
		}
		var de *mcpguard.DenialError
		if errors.As(res.GetError(), &de) {
			return string(de.Code), res
		}
		return "", res
	}
	if got, _ := call(); got != string(mcpguard.CodeInternal) {
		t.Fatalf("first call, the confirmation state cannot be issued: %q, want INTERNAL", got)
	}
	got, res := call()
	if got != "" || res == nil || res.InputRequests == nil {
		t.Errorf("second call, once the signer works: %q, want the human asked to confirm (input requests); the first call was refused before anyone was asked or anything ran, and should have consumed nothing", got)
	}
	if ran != 0 {
		t.Errorf("handler ran %d times, want 0", ran)
	}
}
