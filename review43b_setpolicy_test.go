package mcpguard_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r43bPolicy is echo, a read for every caller, and late, of class c.
func r43bPolicy(t *testing.T, c policy.Class) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "late", Class: c},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReview43bSetPolicyTellsAdmittedTool: a tool added after Install that
// the guard refuses (its ReadOnlyHint contradicts its class: it is not
// listed) and that a new policy admits, visible to the caller under both,
// is one the caller sees under the new policy only: SetPolicy tells the
// session that listed the tools, and its next listing shows the tool.
func TestReview43bSetPolicyTellsAdmittedTool(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run(versionName(v), func(t *testing.T) {
			r := newLCRig(t, v, r43bPolicy(t, policy.Write), lcSpec{tools: []string{"echo"}})
			ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("ok"), nil
			}
			// Added after Install, before any session: the guard refuses
			// late, so the session's listing, which reads it, shows echo.
			r.srv.AddTool(&mcp.Tool{
				Name:        "late",
				InputSchema: json.RawMessage(`{"type":"object"}`),
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			}, ok)
			user := r.connect(bob, lcListTools)
			if got := user.names(t); !slices.Equal(got, []string{"echo"}) {
				t.Fatalf("bob lists %v while late contradicts its class, want [echo]", got)
			}
			r.setPolicy(r43bPolicy(t, policy.Read))
			r.waitTools(user, 1)
			if got := user.names(t); !slices.Equal(got, []string{"echo", "late"}) {
				t.Errorf("bob lists %v after the policy admitted late, want [echo late]", got)
			}
		})
	}
}
