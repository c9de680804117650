package mcpguard_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview63cConfirmRead: a read tool whose rule says Confirm ("a dangerous
// tool that needs a signed human confirmation", policy.ToolRule.Confirm) does
// not run for a client that cannot confirm, nor for one whose human declines.
func TestReview63cConfirmRead(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "export_all", Class: policy.Read, Confirm: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range protocolVersions {
		for _, action := range []string{"", "decline"} {
			r := &rv63cRan{}
			s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			rv63cAddRaw(s, r, "export_all")
			authn := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
				return &mcpguard.Identity{Principal: &policy.Principal{Subject: "vic"}}, nil
			})
			g, err := mcpguard.New(pol, authn, &mcpguard.Options{Audit: &memSink{}, Confirmer: testSigner(t, nil),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(s); err != nil {
				t.Fatal(err)
			}
			co := &mcp.ClientOptions{}
			if action != "" {
				co.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: action}, nil
				}
			}
			cs := connectVersion(t, s, co, v)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "export_all", Arguments: map[string]any{}})
			d, ok := mcpguard.DenialOf(res, err)
			if !ok || d.Code != mcpguard.CodeConfirmationRequired {
				t.Errorf("%s %q: %v %v, want CONFIRMATION_REQUIRED", versionName(v), action, d, err)
			}
			if got := r.all(); len(got) != 0 {
				t.Errorf("%s %q: ran %v", versionName(v), action, got)
			}
			cs.Close()
		}
	}
}
