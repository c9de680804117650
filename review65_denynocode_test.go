package mcpguard_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
)

// TestReview65DenyWithoutCode: a DenialError's text is never empty. Deny("",
// "") printed as "" (a log line or a wrapped error with nothing to say);
// a handler's refusal without a code is the handler's failure (INTERNAL),
// as Guard answers it.
func TestReview65DenyWithoutCode(t *testing.T) {
	for _, tc := range []struct {
		d    *mcpguard.DenialError
		want string
	}{
		{mcpguard.Deny("", ""), "(no code)"},
		{mcpguard.Deny("", "why"), "(no code): why"},
		{mcpguard.Deny(mcpguard.CodeForbidden, ""), "FORBIDDEN"},
		{mcpguard.Deny(mcpguard.CodeForbidden, "why"), "FORBIDDEN: why"},
	} {
		if got := tc.d.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	cs := review41aServe(t, &memSink{}, mcpguard.Options{}, func() (*mcp.CallToolResult, error) {
		return nil, mcpguard.Deny("", "")
	})
	res, err := call(t, cs, "look", map[string]any{})
	d, ok := mcpguard.DenialOf(res, err)
	if !ok || d.Code != mcpguard.CodeInternal {
		t.Errorf("a handler's refusal without a code: %s, %v; want INTERNAL", mustJSON(res), err)
	}
}
