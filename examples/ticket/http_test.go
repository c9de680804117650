package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startHTTP serves ta over HTTP on a loopback port and returns its base URL.
func startHTTP(t *testing.T, ta *testApp) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ta.app, ln, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

type restReply struct {
	status int
	header http.Header
	body   map[string]any
}

func (r restReply) code() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func restPost(t *testing.T, base, tool, tok, sid, body string) restReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/tools/"+tool+"/call", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if sid != "" {
		req.Header.Set("X-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := restReply{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(&out.body); err != nil {
		t.Fatalf("POST %s: status %d, body not JSON: %v", tool, resp.StatusCode, err)
	}
	return out
}

func TestHTTPListToolsEndpoint(t *testing.T) {
	base := startHTTP(t, newTestApp(t, nil))
	resp, err := http.Get(base + "/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Tools []registryEntry `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if diff := cmp.Diff(testConfig(t, nil).registry(), got.Tools); diff != "" || len(got.Tools) != 3 {
		t.Errorf("GET /tools (-want +got):\n%s", diff)
	}
}

func TestHTTPRESTStatuses(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	search := `{"arguments": {"query": ""}}`

	alice := restPost(t, base, "search_docs", "token-alice", "h1", search)
	bob := restPost(t, base, "search_docs", "token-bob", "h2", search)
	if alice.status != 200 || bob.status != 200 {
		t.Fatalf("statuses %d, %d", alice.status, bob.status)
	}
	ids := func(r restReply) []string {
		var out []string
		for _, d := range r.body["result"].(map[string]any)["results"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	if diff := cmp.Diff([]string{"eng-001", "eng-002", "all-001"}, ids(alice)); diff != "" {
		t.Errorf("alice (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sales-001", "sales-002", "all-001"}, ids(bob)); diff != "" {
		t.Errorf("bob (-want +got):\n%s", diff)
	}

	tests := []struct {
		name, tool, tok, sid, body string
		status                     int
		code                       string
	}{
		{"missing_auth", "search_docs", "", "h3", search, 401, "UNAUTHENTICATED"},
		{"unknown_token", "search_docs", "token-mallory", "h3", search, 401, "UNAUTHENTICATED"},
		{"write_not_allowed", "create_ticket", "token-alice", "h3", `{"arguments": {"title": "Broken build", "body": "CI red"}}`, 403, "WRITE_NOT_ALLOWED"},
		{"unknown_tool", "drop_tables", "token-alice", "h3", `{"arguments": {}}`, 404, "TOOL_NOT_FOUND"},
		{"invalid_arguments", "search_docs", "token-alice", "h3", `{"arguments": {"query": 42}}`, 400, "INVALID_ARGUMENTS"},
		{"unknown_body_field", "search_docs", "token-alice", "h3", `{"arguments": {"query": ""}, "token": "token-admin"}`, 400, "INVALID_ARGUMENTS"},
		{"no_session_header", "search_docs", "token-alice", "", search, 400, "INVALID_ARGUMENTS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := restPost(t, base, tt.tool, tt.tok, tt.sid, tt.body)
			if r.status != tt.status || r.code() != tt.code {
				t.Errorf("got %d %s (%v), want %d %s", r.status, r.code(), r.body, tt.status, tt.code)
			}
			if tt.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: %v", r.header)
			}
		})
	}
	if n := ta.tickets.Calls(); n != 0 {
		t.Errorf("ticket system called %d times", n)
	}
}

func TestHTTPRateLimitReturns429(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	for i := 1; i <= 5; i++ {
		if r := restPost(t, base, "search_docs", "token-alice", "rl", `{"arguments": {"query": ""}}`); r.status != 200 {
			t.Fatalf("call %d: %d %v", i, r.status, r.body)
		}
	}
	r := restPost(t, base, "search_docs", "token-alice", "rl", `{"arguments": {"query": ""}}`)
	if r.status != 429 || r.code() != "RATE_LIMIT_EXCEEDED" || r.header.Get("Retry-After") != "12" {
		t.Fatalf("call 6: %d %s Retry-After %q, want 429 RATE_LIMIT_EXCEEDED 12", r.status, r.code(), r.header.Get("Retry-After"))
	}
	if evs := ta.events(t, audit.Filter{SessionID: restSessionID("rl", "alice"), Code: "RATE_LIMIT_EXCEEDED"}); len(evs) != 1 {
		t.Errorf("%d audited rate denials, want 1", len(evs))
	}
}

// TestHTTPSessionsBelongToTheirFirstCaller: a REST session is the pair
// (X-Session-Id, caller). Another caller naming alice's session gets a
// session of their own, with its own budget and id, and spends none of
// hers (the seed let anyone who named a session share, and use up, its
// budget); a caller without a valid token is refused as UNAUTHENTICATED
// as before.
func TestHTTPSessionsBelongToTheirFirstCaller(t *testing.T) {
	ta := newTestApp(t, nil) // 5 calls per session and window
	base := startHTTP(t, ta)
	call := func(tok string) restReply {
		return restPost(t, base, "search_docs", tok, "mine", `{"arguments": {"query": ""}}`)
	}
	if r := call("token-alice"); r.status != 200 {
		t.Fatalf("alice opens her session: %d %v", r.status, r.body)
	}
	for i := 1; i <= 6; i++ {
		want := map[bool]int{true: 200, false: 429}[i <= 5]
		if r := call("token-bob"); r.status != want {
			t.Fatalf("bob's call %d naming alice's session: %d %v, want %d (his own session)", i, r.status, r.body, want)
		}
	}
	if r := call(""); r.status != 401 {
		t.Errorf("no token: %d %v, want 401", r.status, r.body)
	}
	for i := 2; i <= 5; i++ {
		if r := call("token-alice"); r.status != 200 {
			t.Fatalf("alice's call %d: %d %v; bob's calls spent her budget", i, r.status, r.body)
		}
	}
	if r := call("token-alice"); r.status != 429 {
		t.Errorf("alice's sixth call: %d, want 429", r.status)
	}
	for who, sid := range map[string]string{"alice": restSessionID("mine", "alice"), "bob": restSessionID("mine", "bob")} {
		evs := ta.events(t, audit.Filter{SessionID: sid})
		if len(evs) != 6 {
			t.Errorf("%s's session %s: %d records, want 6", who, sid, len(evs))
		}
		for _, e := range evs {
			if e.Subject != who {
				t.Errorf("%s's session %s has a record of %q", who, sid, e.Subject)
			}
		}
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	tok  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.tok != "" {
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return b.base.RoundTrip(r)
}

func connectHTTP(t *testing.T, base, tok string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tok, http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolCode returns the error code of a tool result, "" for success.
func toolCode(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		return ""
	}
	e, _ := res.StructuredContent.(map[string]any)["error"].(map[string]any)
	return e["code"].(string)
}

func TestMCPOverHTTPWithGoSDKClient(t *testing.T) {
	ta := newTestApp(t, nil)
	base := startHTTP(t, ta)
	alice := connectHTTP(t, base, "token-alice")
	bob := connectHTTP(t, base, "token-bob")
	if alice.ID() == "" || alice.ID() == bob.ID() {
		t.Fatalf("session ids %q, %q", alice.ID(), bob.ID())
	}

	lt, err := alice.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"create_ticket", "list_tools", "search_docs"}, names); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}

	search := &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}}
	res, err := bob.CallTool(t.Context(), search)
	if toolCode(t, res, err) != "" {
		t.Fatalf("bob: %v", res.StructuredContent)
	}
	if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "sales-001") || strings.Contains(res.Content[0].(*mcp.TextContent).Text, "eng-001") {
		t.Errorf("bob's results: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	res, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_ticket", Arguments: ticketArgs()})
	if c := toolCode(t, res, err); c != "WRITE_NOT_ALLOWED" {
		t.Errorf("create_ticket: %s", c)
	}
	_, err = alice.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
	// The MCP session is the limiter's session: alice's write and unknown
	// tool took nothing; 5 calls pass, the 6th is refused, bob's session is
	// untouched.
	for i := 1; i <= 5; i++ {
		res, err := alice.CallTool(t.Context(), search)
		if c := toolCode(t, res, err); c != "" {
			t.Fatalf("alice call %d: %s", i, c)
		}
	}
	res, err = alice.CallTool(t.Context(), search)
	if c := toolCode(t, res, err); c != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("alice call 6: %q", c)
	}
	res, err = bob.CallTool(t.Context(), search)
	if c := toolCode(t, res, err); c != "" {
		t.Fatalf("bob after alice's burst: %s", c)
	}
	evs := ta.events(t, audit.Filter{SessionID: alice.ID()})
	if len(evs) != 8 || evs[0].Subject != "alice" || evs[7].Code != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("alice's session in the audit trail: %+v", rows(evs))
	}

	// A session without a token can connect, but every call is refused.
	anon := connectHTTP(t, base, "")
	res, err = anon.CallTool(t.Context(), search)
	if c := toolCode(t, res, err); c != "UNAUTHENTICATED" {
		t.Errorf("anonymous: %q", c)
	}
}

func TestServeHTTPCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve-http", "--port", "0", "--audit-dir", t.TempDir()}, pw, stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no address line: %v; stderr:\n%s", err, stderr)
	}
	go io.Copy(io.Discard, pr)
	addr := strings.Fields(strings.TrimPrefix(line, "ticket: serving "))[0]
	if !strings.HasPrefix(addr, "http://127.0.0.1:") {
		t.Fatalf("address line %q", line)
	}
	r := restPost(t, addr, "search_docs", "token-bob", "cmd", `{"arguments": {"query": ""}}`)
	if r.status != 200 {
		t.Errorf("REST: %d %v", r.status, r.body)
	}
	cs := connectHTTP(t, addr, "token-alice")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": ""}})
	if c := toolCode(t, res, err); c != "" {
		t.Errorf("MCP: %s", c)
	}
	cs.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
}

func TestServeHTTPRefusesNonLoopbackHost(t *testing.T) {
	stderr := &syncBuffer{}
	code := run(t.Context(), []string{"serve-http", "--host", "0.0.0.0", "--port", "0", "--audit-dir", t.TempDir()}, io.Discard, stderr)
	if code != 2 || !strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if err := checkLoopback("::1", false); err != nil {
		t.Error(err)
	}
	if err := checkLoopback("192.0.2.1", true); err != nil {
		t.Error(errors.New("--allow-remote did not allow"))
	}
}
