package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview22NoSinkWriteNotRetryable: a guard with no audit sink refuses
// every write (no durable intent) with AUDIT_UNAVAILABLE; no retry can
// succeed, so the refusal is not retryable. Before, it said retryable: true,
// and a model was told to try again; a failing sink still says retryable.
func TestReview22NoSinkWriteNotRetryable(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "add_note", Class: policy.Write}},
		WriteAllowlist: []string{"add_note"},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "bob", Roles: []string{"user"}}}, nil
	})
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ran := false
	srv.AddTool(&mcp.Tool{Name: "add_note", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran = true
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if ran || !res.IsError || body.Error.Code != "AUDIT_UNAVAILABLE" || body.Error.Retryable || !strings.Contains(body.Error.Message, "no audit trail") {
		t.Errorf("write with no sink: ran %v, answer %s; want AUDIT_UNAVAILABLE, retryable false, saying there is no audit trail", ran, raw)
	}
}

// TestReview22FromTokenReasons: FromToken's refusals say what is wrong
// with the token it was given, not "the launching token holds an unknown
// token".
func TestReview22FromTokenReasons(t *testing.T) {
	table, err := token.Parse([]byte(`{"good":"user"}`))
	if err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}}
	for tok, want := range map[string]string{
		"":     "the token given to FromToken is empty",
		"nope": "the token given to FromToken is not in the token table",
	} {
		_, err := mcpguard.FromToken(tok, table).Authenticate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromToken(%q): %v; want an error saying %q", tok, err, want)
		}
	}
}

// TestReview22ReadOnlyHintMessage: a read tool whose annotations set only
// a title (ReadOnlyHint false, its zero value) fails Install with an error
// that says what to set.
func TestReview22ReadOnlyHintMessage(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "search", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.FromToken("", nil), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "search", Annotations: &mcp.ToolAnnotations{Title: "Search"}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	err = g.Install(srv)
	if err == nil || !strings.Contains(err.Error(), "set ReadOnlyHint: true") {
		t.Errorf("Install = %v; want an error saying to set ReadOnlyHint: true", err)
	}
}
