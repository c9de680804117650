package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review62fBrokenRand is a nonce source that fails.
type review62fBrokenRand struct{}

func (review62fBrokenRand) Read([]byte) (int, error) {
	return 0, errors.New("review62f: no entropy")
}

// TestReview62fChainSealRefusalDetail: a handler's request for more input
// whose state cannot be sealed (the signer cannot draw a nonce) is refused
// INTERNAL by a Guard, whose record says why ("sealing the request state:
// ..."). The Limit and Confirm steps refuse it so too (sealed), but with
// g.deny, not telling the Audit middleware outside (stepDeny, audited): its
// record of the refusal has no detail, where Audit's doc and 7d5bb3a
// promise "why a step refused the call (in the Guard's words)".
func TestReview62fChainSealRefusalDetail(t *testing.T) {
	signer := testSigner(t, &confirm.Options{Rand: review62fBrokenRand{}})
	handle := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := textResult("which one?")
		r.RequestState = "round-1"
		return r, nil
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	detail := func(s *memSink) string {
		t.Helper()
		for _, e := range s.all() {
			if e.Phase == audit.PhaseOutcome {
				return e.Detail
			}
		}
		t.Fatal("no outcome record")
		return ""
	}
	guardSink := &memSink{}
	g, err := mcpguard.New(stepPolicy(t), fixed(bob), &mcpguard.Options{
		Logger: quiet, Audit: guardSink, Confirmer: signer, Limiter: lim,
	})
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, handle)
	if err != nil {
		t.Fatal(err)
	}
	if got := codeOfCall(t, wrapped, req("echo", `{}`)); got != string(mcpguard.CodeInternal) {
		t.Fatalf("Guard: %q, want INTERNAL", got)
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := detail(guardSink)
	if want == "" {
		t.Fatal("the Guard's record has no detail")
	}
	p, m := stepPolicy(t), must(t)
	for name, step := range map[string]mcpguard.Middleware{
		"limit":   m(mcpguard.Limit(lim, p, &mcpguard.Options{Logger: quiet, Confirmer: signer})),
		"confirm": m(mcpguard.Confirm(signer, p, &mcpguard.Options{Logger: quiet})),
	} {
		sink := &memSink{}
		opts := &mcpguard.Options{Logger: quiet}
		h := mcpguard.Chain(mcpguard.Recover(quiet), m(mcpguard.Audit(sink, opts)), mcpguard.Authenticate(fixed(bob)), step)(handle)
		if got := codeOfCall(t, h, req("echo", `{}`)); got != string(mcpguard.CodeInternal) {
			t.Fatalf("%s: %q, want INTERNAL", name, got)
		}
		if got := detail(sink); got != want {
			t.Errorf("%s: the chain's record says %q, the Guard's %q", name, got, want)
		}
	}
}
