package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type whoamiParams struct {
	mcp.ParamsBase
}

type whoamiResult struct {
	mcp.ResultBase
	Subject string `json:"subject"`
}

// TestReview23CustomMethodRunsAsCaller: a method the server added with
// mcp.AddReceivingCustomMethod runs as its authenticated caller, as the
// server's prompts and resources do: a caller the guard cannot
// authenticate is refused before the handler hears of it, and the handler
// finds the caller's Identity in its context. It passed the guard
// unauthenticated, with no Identity to act as.
func TestReview23CustomMethodRunsAsCaller(t *testing.T) {
	var heard []string
	h := newServerHarness(t, basePolicy(false), nil, func(s *mcp.Server) {
		err := mcp.AddReceivingCustomMethod(s, "acme/whoami", func(ctx context.Context, _ *mcp.ServerSession, _ *whoamiParams) (*whoamiResult, error) {
			sub := "<nobody>"
			if id := mcpguard.FromContext(ctx); id != nil && id.Principal != nil {
				sub = id.Principal.Subject
			}
			heard = append(heard, sub)
			return &whoamiResult{Subject: sub}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	res, werr := h.rawConnect(bob).call("acme/whoami", `{}`)
	if werr != nil {
		t.Fatalf("bob's acme/whoami: %v", werr)
	}
	var out whoamiResult
	if err := json.Unmarshal(res, &out); err != nil || out.Subject != "bob" {
		t.Errorf("bob's acme/whoami answered %s (%v), want subject bob", res, err)
	}
	_, werr = h.rawConnect(nil).call("acme/whoami", `{}`)
	if werr == nil || !strings.Contains(string(werr.Data)+werr.Message, string(mcpguard.CodeUnauthenticated)) {
		t.Errorf("an unauthenticated acme/whoami answered %v, want UNAUTHENTICATED", werr)
	}
	if len(heard) != 1 || heard[0] != "bob" {
		t.Errorf("the handler heard %q, want only bob", heard)
	}
}
