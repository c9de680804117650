package mcpguard_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview60ConfirmAsksOnlyDeclaredElicitation: on protocol 2026-07-28
// the guard asks for a confirmation within the result (an input request
// for a form elicitation), which a client answers only when its request
// declares the elicitation capability for form mode. One that declares
// none, or URL mode only, is refused CONFIRMATION_REQUIRED, as an older
// client without the capability is, instead of being asked a question its
// SDK fails the call over with an error of its own (mcp-go: "no
// elicitation handler configured"); one that declares it is asked.
func TestReview60ConfirmAsksOnlyDeclaredElicitation(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps *mcp.ClientCapabilities
		ask  bool
	}{
		{"none", &mcp.ClientCapabilities{}, false},
		{"url_only", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, false},
		{"form", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}, true},
		{"unqualified", elicitCaps(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, basePolicy(false), nil)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := h.srv.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			h.auth.mu.Lock()
			h.auth.ids[ss] = bob
			h.auth.mu.Unlock()
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"},
				&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: tc.caps})
			cs, err := c.Connect(context.Background(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close(); ss.Close() })
			res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.ask {
				if !res.NeedsInput() {
					t.Errorf("not asked: %s", mustJSON(res))
				}
				return
			}
			if code := errorCode(t, res); code != "CONFIRMATION_REQUIRED" || res.NeedsInput() {
				t.Errorf("answer %s, want CONFIRMATION_REQUIRED", mustJSON(res))
			}
			if n := h.down.calls.Load(); n != 0 {
				t.Errorf("the tool ran %d times", n)
			}
		})
	}
}
