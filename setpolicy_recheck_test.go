package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSetPolicyWhileTheUserIsAsked: an older client (2025-11-25) is asked
// to confirm a write within the call; the operator revokes the write
// while the human looks at the question. The human's accept, coming
// after, must not run the write: the call is decided once more by the
// policy of the moment the answer came.
func TestSetPolicyWhileTheUserIsAsked(t *testing.T) {
	confirmPut := policy.ToolRule{Name: "put", Class: policy.Write, Confirm: true}
	for _, tt := range []struct {
		name string
		next policy.Config
		want string
	}{
		{"off_the_allowlist", policy.Config{Tools: r29pRules(confirmPut)}, "WRITE_NOT_ALLOWED"},
		{"hidden", policy.Config{Tools: r29pRules(confirmPut), WriteAllowlist: []string{"put"},
			RoleRules: []policy.RoleRule{{Pattern: "put", Roles: []string{"nobody"}}}}, "jsonrpc:"},
		{"unchanged_rules", policy.Config{Tools: r29pRules(confirmPut), WriteAllowlist: []string{"put"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := r29pPolicy(t, policy.Config{Tools: r29pRules(confirmPut), WriteAllowlist: []string{"put"}})
			h := newR29p(t, old, &mcpguard.Options{Confirmer: testSigner(t, nil), NoWriteAhead: true})
			next := r29pPolicy(t, tt.next)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := h.srv.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			asked := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					if err := h.g.SetPolicy(next); err != nil {
						return nil, err
					}
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close(); ss.Close() })
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "put", Arguments: json.RawMessage(`{}`)})
			if asked != 1 {
				t.Fatalf("asked %d times, want 1", asked)
			}
			got := codeOf(t, res, err)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("the same rules after SetPolicy: %s, want the write run", got)
			case tt.want == "jsonrpc:" && (len(got) < 8 || got[:8] != "jsonrpc:"):
				t.Errorf("hidden after the question: %s, want the unknown tool's JSON-RPC error", got)
			case tt.want != "" && tt.want != "jsonrpc:" && got != tt.want:
				t.Errorf("revoked after the question: %s, want %s", got, tt.want)
			}
			wantRan := int64(0)
			if tt.want == "" {
				wantRan = 1
			}
			if n := h.ran.Load(); n != wantRan {
				t.Errorf("the write ran %d times, want %d", n, wantRan)
			}
		})
	}
}
