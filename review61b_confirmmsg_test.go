package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type r61bBearer struct{ tok string }

func (b r61bBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestReview61bConfirmNotInstalledMessage: a user who guards a dangerous
// write with Guard.AddTool (no Guard.Install) and serves it over stateful
// Streamable HTTP behind token.Table.BindSessions, as the README says,
// has an older client's call refused CONFIRMATION_REQUIRED, as documented
// ("a handler Guard.Wrap guards ... on a server no guard is installed on,
// refuses every such call"). But the refusal, and its audit record, say
// that "the session is not bound to its user", which it is: the user goes
// looking for a missing BindSessions. The reason is that no guard is
// installed on the server to see the session opened.
func TestReview61bConfirmNotInstalledMessage(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"wipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := token.Parse([]byte(`{"ann-tok":{"sub":"ann","role":"admin"}}`))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k", Secret: bytes.Repeat([]byte{7}, 32)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, *e)
		return nil
	})
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{
		Audit: sink, Confirmer: signer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ran := 0
	err = g.AddTool(server, &mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(tokens.BindSessions(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server }, nil)))
	defer hs.Close()
	asked := 0
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL,
		HTTPClient: &http.Client{Transport: r61bBearer{"ann-tok"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	d, ok := mcpguard.DenialOf(cs.CallTool(ctx, &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{}}))
	if !ok || d.Code != mcpguard.CodeConfirmationRequired || asked != 0 || ran != 0 {
		t.Fatalf("want the documented refusal CONFIRMATION_REQUIRED, not asked, not run; got %v (asked %d, ran %d)", d, asked, ran)
	}
	if strings.Contains(d.Message, "not bound") || !strings.Contains(strings.ToLower(d.Message), "install") {
		t.Errorf("the refusal says %q: the session is bound (token.Table.BindSessions); "+
			"it should say that no guard is installed on the server (Guard.Install)", d.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range recs {
		if e.Tool == "wipe" && strings.Contains(e.Detail, "not bound") {
			t.Errorf("the record's detail says %q, on a session BindSessions bound", e.Detail)
		}
	}
}
