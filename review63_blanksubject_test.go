package mcpguard_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63BlankSubjectIsNoIdentity: an Authenticator of the user's
// that read a header or claim present but blank answered a Principal whose
// Subject was " " (or a tab, or U+3000): the guard took it for a caller,
// and every such caller shared that one user's identity, caps and audit
// subject, where an empty Subject is refused (policy.Principal: "never
// empty for an authenticated principal"). A Subject only of white space is
// no identity: UNAUTHENTICATED, in a Guard and in the chain's Authenticate.
func TestReview63BlankSubjectIsNoIdentity(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{" ", "\t\n", "\u3000", "\u00a0 "} {
		auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
			return &mcpguard.Identity{Principal: &policy.Principal{Subject: subject, Roles: []string{"user"}}}, nil
		})
		ran := false
		h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran = true
			return textResult("ok"), nil
		}
		g, err := mcpguard.New(p, auth, &mcpguard.Options{Audit: &memSink{}})
		if err != nil {
			t.Fatal(err)
		}
		w, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, h)
		if err != nil {
			t.Fatal(err)
		}
		for name, handler := range map[string]mcp.ToolHandler{
			"guard": w,
			"chain": mcpguard.Chain(mcpguard.Authenticate(auth), mcpguard.Authorize(p))(h),
		} {
			res, err := handler(context.Background(), r61cCall("r"))
			d, ok := mcpguard.DenialOf(res, err)
			if !ok || d.Code != mcpguard.CodeUnauthenticated {
				t.Errorf("%s, subject %q: %v %v, want UNAUTHENTICATED", name, subject, res, err)
			}
		}
		if ran {
			t.Errorf("subject %q: the tool ran", subject)
		}
	}
}
