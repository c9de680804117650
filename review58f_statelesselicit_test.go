package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview58fStatelessOlderClientToldItCannotElicit: replicas behind a
// load balancer without stickiness are served stateless (a stateful
// session lives on one replica only: the other answers "session not
// found"). A client on protocol 2025-11-25 that supports elicitation (its
// initialize says so) calls a tool that needs a confirmation. A stateless
// server cannot send it a request, so it cannot be asked; refusing the call
// CONFIRMATION_REQUIRED is right (Options.Confirmer: "as is a call no one can
// be asked for"). But the refusal, and the audit record's detail, say "the
// client does not support elicitation", which is false: the client does, and
// an operator who reads the trail goes to fix the client. The go-sdk's
// stateless transport keeps no initialize (it synthesizes one without
// capabilities), and the guard reads that as the client's answer. The
// refusal should say that the server cannot ask (a session without an id
// over HTTP), not blame the client.
func TestReview58fStatelessOlderClientToldItCannotElicit(t *testing.T) {
	tokens, err := token.Parse([]byte(`{"tok-ann":{"sub":"ann","role":"support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "1"}, nil)
	ran := 0
	srv.AddTool(&mcp.Tool{Name: "refund", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return textResult("refunded"), nil
		})
	sink := &memSink{}
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{Audit: sink, Confirmer: testSigner(t, nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer hs.Close()

	asked := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "older", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	b := &rfBalancer{token: "tok-ann", route: func() int { return 0 }, hits: make([]int, 1), urls: []string{hs.URL}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: b}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.InitializeResult() == nil {
		t.Fatal("the older client did not initialize")
	}

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{}})
	d, ok := mcpguard.DenialOf(res, err)
	if !ok {
		t.Fatalf("call answered %v %s; want a refusal", err, mustJSON(res))
	}
	if d.Code != mcpguard.CodeConfirmationRequired || ran != 0 || asked != 0 {
		t.Fatalf("refusal %s %q, tool ran %d times, client asked %d times; want CONFIRMATION_REQUIRED, not run", d.Code, d.Message, ran, asked)
	}
	if strings.Contains(d.Message, "does not support elicitation") || !strings.Contains(d.Message, "stateless") {
		t.Errorf("refusal told to a client that supports elicitation: %q; want it to say that this server cannot ask it (stateless), not that the client lacks elicitation", d.Message)
	}
	evs := sink.all()
	if last := evs[len(evs)-1]; strings.Contains(last.Detail, "does not support elicitation") {
		t.Errorf("audit detail %q blames the client, which declared elicitation; the stateless server is what cannot ask", last.Detail)
	}
}
