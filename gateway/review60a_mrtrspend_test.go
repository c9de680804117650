package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/gateway"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview60aConfirmedCallChargedOnce: on protocol 2026-07-28 a guarded
// downstream asks its user to confirm a write by a multi round-trip
// (SEP-2322): it answers the first tools/call with resultType
// "input_required", and the client sends the same tools/call again with
// inputResponses and requestState. mark3labs/mcp-go v1.2.1 does this by
// itself in Client.CallTool (client/mrtr.go:56-103 multiRoundTrip,
// callToolOnce at client/mrtr.go:217-231 sending params with
// MultiRoundTripParams). Both rounds are one logical call (DESIGN: "The
// MRTR retry of one logical call counts once"), and the library's limiter
// counts them once. The gateway charges each round as a call of its own:
// a refund of 10 under a spend cap of 15 is charged 10 for the question,
// and the user's confirmed answer is then refused SPEND_LIMIT_EXCEEDED
// (-32029, 429): the write the user confirmed never runs, and the cap is
// spent on a call that did nothing (with a larger cap, every confirmed
// call costs twice).
func TestReview60aConfirmedCallChargedOnce(t *testing.T) {
	var ran atomic.Int32
	server := mcp.NewServer(&mcp.Implementation{Name: "down", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "trigger_refund", InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil
		})
	downPol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	guard, err := mcpguard.New(downPol, mcpguard.FromGatewayHeaders(nil), &mcpguard.Options{
		Confirmer: signer, NoWriteAhead: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Install(server); err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer down.Close()

	// The gateway cannot ask a human, so its rule has no Confirm: the
	// downstream asks. It caps the refunds' spend.
	gwPol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "trigger_refund", Class: policy.Write, Cost: 10}},
		WriteAllowlist: []string{"trigger_refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "trigger_refund", Max: 15, Window: time.Hour},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := gateway.ParseTokens([]byte(`{"tok-vera":{"sub":"vera","role":"support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(down.URL, tokens, &gateway.Options{Policy: gwPol, Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	defer gw.Close()

	// What mcp-go sends on 2026-07-28: the request's _meta
	// (client/protocol.go:79-115 applyRequestMeta) and the
	// Mcp-Protocol-Version, Mcp-Method and Mcp-Name headers
	// (client/protocol.go:129-164, transport/streamable_http.go:826-841).
	const meta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"mcp-go","version":"1.2.1"},` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	post := func(id int, extra string) (int, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{` + meta +
			`,"arguments":{"amount":10},"name":"trigger_refund"` + extra + `}}`
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok-vera")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "trigger_refund")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}

	status, body := post(1, "")
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &first); err != nil || first.Result.ResultType != "input_required" ||
		len(first.Result.InputRequests) != 1 || first.Result.RequestState == "" {
		t.Fatalf("first round: want the downstream's input_required, got %d %q", status, body)
	}
	// The user accepts (mcp-go: NewElicitationInputResponse, mcp/mrtr.go:133,
	// marshalled as the ElicitationResult itself, mcp/mrtr.go:149-153).
	responses := map[string]any{}
	for key := range first.Result.InputRequests {
		responses[key] = map[string]any{"action": "accept", "content": map[string]any{}}
	}
	rb, _ := json.Marshal(responses)
	sb, _ := json.Marshal(first.Result.RequestState)
	status, body = post(2, `,"inputResponses":`+string(rb)+`,"requestState":`+string(sb))
	if status != http.StatusOK || !strings.Contains(body, "refunded") || ran.Load() != 1 {
		t.Errorf("the confirmed call (one refund of 10 under a cap of 15, its question charged 10 already) "+
			"was not run: %d %q (handler ran %d times)", status, body, ran.Load())
	}
}
