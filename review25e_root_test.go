package mcpguard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessRig is a guarded server over stateful Streamable HTTP on loopback,
// authenticating bearer tokens of a token table: alice-tok is alice,
// bob-tok is bob.
type sessRig struct {
	url    string
	down   *spy
	tokens *token.Table
}

// newSessRig serves the harness tools, a resource and a prompt, guarded by
// mcpguard.BearerTokens; with bind, the handler is wrapped in
// token.Table.BindSessions, as doc.go and the README say to assemble it.
func newSessRig(t *testing.T, bind bool) *sessRig {
	t.Helper()
	tokens, err := token.New(map[string]*policy.Principal{
		"alice-tok": {Subject: "alice", Roles: []string{"user"}},
		"bob-tok":   {Subject: "bob", Roles: []string{"user"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &sessRig{down: &spy{}, tokens: tokens}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, r.down)
	srv.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "notes of " + mcpguard.FromContext(ctx).Principal.Subject}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, mcpguard.BearerTokens(tokens), &mcpguard.Options{
		Audit: &memSink{}, Confirmer: testSigner(t, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if bind {
		h = tokens.BindSessions(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

// rawSend sends one HTTP request to the MCP endpoint on session sid, with
// bearer token tok ("" for none) and the given extra headers, and returns
// its status and the start of its body. A stream the server opens is read
// for at most 300 ms.
func rawSend(t *testing.T, url, method, sid, tok, body string, hdr map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	return resp.StatusCode, string(b)
}

// victim is alice's go-sdk client: its elicitation handler reports each
// question on asked and answers with what the test sends on answer.
type victim struct {
	cs     *mcp.ClientSession
	asked  chan string
	answer chan string
}

func connectVictim(t *testing.T, url string, rt http.RoundTripper) *victim {
	t.Helper()
	v := &victim{asked: make(chan string, 4), answer: make(chan string, 4)}
	elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		v.asked <- req.Params.Message
		select {
		case a := <-v.answer:
			return &mcp.ElicitResult{Action: a}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
		Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	v.cs = cs
	return v
}

// startWipe starts alice's confirmed call and waits for its question.
func (v *victim) startWipe(t *testing.T) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		res, err := v.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
		switch {
		case err != nil:
			done <- "error: " + err.Error()
		case res.IsError:
			done <- fmt.Sprint(res.StructuredContent)
		default:
			done <- "ran"
		}
	}()
	select {
	case <-v.asked:
	case <-time.After(5 * time.Second):
		t.Fatal("alice was never asked to confirm")
	}
	return done
}

// forgeAccepts posts, as tok on session sid, an "accept" answer to each of
// the server's first requests (the go-sdk numbers them from 1), and returns
// the statuses seen.
func forgeAccepts(t *testing.T, url, sid, tok string) []int {
	t.Helper()
	var st []int
	for id := 1; id <= 4; id++ {
		code, _ := rawSend(t, url, http.MethodPost, sid, tok, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"action":"accept","content":{}}}`, id), nil)
		st = append(st, code)
	}
	return st
}

// TestReview25eBoundSessionRefusesOthers: over stateful Streamable HTTP
// assembled as documented (BindSessions around the go-sdk handler), bob,
// a caller without a token, and one with an unknown token, knowing alice's
// session id, get 403 for every request on it (the unknown token 401,
// invalid_token, since TestReview56BindSessionsTellsToRefresh): calls, listings, reads,
// prompts, a cancellation of her call, an answer to her confirmation
// question, her stream (resumed or not) and its DELETE. Her call is not
// confirmed by their answers and her session outlives their DELETE.
func TestReview25eBoundSessionRefusesOthers(t *testing.T) {
	r := newSessRig(t, true)
	alice := connectVictim(t, r.url, bearerRT{"alice-tok"})
	sid := alice.cs.ID()
	if sid == "" {
		t.Fatal("no session id")
	}
	done := alice.startWipe(t)
	for _, tok := range []string{"bob-tok", "", "nobody-tok"} {
		who := map[string]string{"bob-tok": "bob", "": "no token", "nobody-tok": "unknown token"}[tok]
		want := http.StatusForbidden
		if tok == "nobody-tok" {
			want = http.StatusUnauthorized
		}
		for i, code := range forgeAccepts(t, r.url, sid, tok) {
			if code != want {
				t.Errorf("%s: answer to request %d on alice's session: HTTP %d, want %d", who, i+1, code, want)
			}
		}
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":91,"method":"tools/call","params":{"name":"wipe","arguments":{"target":"db-1"}}}`,
			`{"jsonrpc":"2.0","id":92,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
			`{"jsonrpc":"2.0","id":93,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":94,"method":"resources/read","params":{"uri":"file:///notes.txt"}}`,
			`{"jsonrpc":"2.0","id":95,"method":"prompts/get","params":{"name":"greet"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		} {
			if code, b := rawSend(t, r.url, http.MethodPost, sid, tok, body, nil); code != want {
				t.Errorf("%s: POST %s on alice's session: HTTP %d %q, want %d", who, body, code, b, want)
			}
		}
		for _, hdr := range []map[string]string{nil, {"Last-Event-ID": "0_1"}, {"Last-Event-ID": "1_1"}} {
			if code, b := rawSend(t, r.url, http.MethodGet, sid, tok, "", hdr); code != want {
				t.Errorf("%s: GET %v on alice's session: HTTP %d %q, want %d", who, hdr, code, b, want)
			}
		}
		if code, _ := rawSend(t, r.url, http.MethodDelete, sid, tok, "", nil); code != want {
			t.Errorf("%s: DELETE of alice's session: HTTP %d, want %d", who, code, want)
		}
	}
	alice.answer <- "decline"
	select {
	case got := <-done:
		if got == "ran" || r.down.calls.Load() != 0 {
			t.Errorf("alice declined, yet wipe ran (%q, %d runs)", got, r.down.calls.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("alice's call never ended")
	}
	res, err := alice.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("alice's session after the attacks: %v %s", err, mustJSON(res))
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "alice ") {
		t.Errorf("alice's call ran as %q", got)
	}
}

// TestReview25eUnboundSessionConfirmation: where the session is not bound
// to its user (the guard's bearer tokens without BindSessions, as with any
// authenticator of headers the go-sdk does not verify), anyone who learns
// alice's session id could answer the older protocol's confirmation
// question put to her: bob, or a caller with no token at all, posted
// "accept" and her write ran while she was still being asked. The guard
// does not ask there: her call is refused, nothing is sent to answer, and
// the write does not run.
func TestReview25eUnboundSessionConfirmation(t *testing.T) {
	for _, tok := range []string{"bob-tok", ""} {
		r := newSessRig(t, false)
		alice := connectVictim(t, r.url, bearerRT{"alice-tok"})
		sid := alice.cs.ID()
		done := make(chan string, 1)
		go func() {
			res, err := alice.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db-1"}})
			if err != nil {
				done <- "error: " + err.Error()
				return
			}
			done <- errorCode(t, res)
		}()
		select {
		case <-alice.asked:
			// The forged answers race alice's own, which never comes.
			forgeAccepts(t, r.url, sid, tok)
			alice.answer <- "decline"
		case got := <-done:
			done <- got
		case <-time.After(5 * time.Second):
			t.Fatal("alice's call never ended")
		}
		if got := <-done; got != "CONFIRMATION_REQUIRED" || r.down.calls.Load() != 0 {
			t.Errorf("%q answering on alice's unbound session: alice's call %q, wipe ran %d times; want CONFIRMATION_REQUIRED and no run", tok, got, r.down.calls.Load())
		}
	}
}

// TestReview25eBoundSessionConfirms: on a bound session (BindSessions)
// alice is asked, and her own answer decides.
func TestReview25eBoundSessionConfirms(t *testing.T) {
	r := newSessRig(t, true)
	alice := connectVictim(t, r.url, bearerRT{"alice-tok"})
	done := alice.startWipe(t)
	alice.answer <- "accept"
	if got := <-done; got != "ran" || r.down.calls.Load() != 1 {
		t.Errorf("alice accepted on her bound session: %q, %d runs; want one run", got, r.down.calls.Load())
	}
}

// idConn gives an in-memory server connection a session id, as a server
// that names its stdio session does (examples/ticket): no headers, one
// client.
type idConn struct{ mcp.Connection }

func (idConn) SessionID() string { return "stdio-1" }

type idTransport struct{ t mcp.Transport }

func (t idTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return idConn{c}, nil
}

// TestReview25eStdioSessionConfirms: a stream session (stdio, in memory)
// has one client, whose answer is the one asked for: named or not, the
// older protocol's question is put to it and its answer decides.
func TestReview25eStdioSessionConfirms(t *testing.T) {
	for _, named := range []bool{false, true} {
		for _, action := range []string{"accept", "decline"} {
			tokens, err := token.New(map[string]*policy.Principal{"alice-tok": {Subject: "alice", Roles: []string{"user"}}})
			if err != nil {
				t.Fatal(err)
			}
			down := &spy{}
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			addTools(srv, down)
			pol, err := policy.New(basePolicy(false))
			if err != nil {
				t.Fatal(err)
			}
			g, err := mcpguard.New(pol, mcpguard.FromToken("alice-tok", tokens), &mcpguard.Options{
				Audit: &memSink{}, Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Install(srv); err != nil {
				t.Fatal(err)
			}
			ct, st := mcp.NewInMemoryTransports()
			var sst mcp.Transport = st
			if named {
				sst = idTransport{st}
			}
			ss, err := srv.Connect(context.Background(), sst, nil)
			if err != nil {
				t.Fatal(err)
			}
			var asked atomic.Int64
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answer(action, &asked)}).
				Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
			cs.Close()
			ss.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if action == "accept" {
				want = 1
			}
			if asked.Load() != 1 || down.calls.Load() != want {
				t.Errorf("named %v, %s: asked %d, ran %d (%s); want asked once, ran %d", named, action, asked.Load(), down.calls.Load(), mustJSON(res), want)
			}
		}
	}
}

// TestReview25eGatewaySessionConfirms: a stateful server behind mcpguard's
// gateway (FromGatewayHeaders), which binds each session to its subject
// itself, still asks an older client whose call carries the gateway's
// subject header; one whose call does not (the anonymous principal) is
// refused without being asked.
func TestReview25eGatewaySessionConfirms(t *testing.T) {
	for _, viaGateway := range []bool{true, false} {
		down := &spy{}
		srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		addTools(srv, down)
		pol, err := policy.New(basePolicy(false))
		if err != nil {
			t.Fatal(err)
		}
		g, err := mcpguard.New(pol, mcpguard.FromGatewayHeaders(&policy.Principal{Subject: "anonymous", Roles: []string{"user"}}), &mcpguard.Options{
			Audit: &memSink{}, Confirmer: testSigner(t, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		var rt http.RoundTripper = http.DefaultTransport
		if viaGateway {
			rt = gatewayRT{}
		}
		var asked atomic.Int64
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answer("accept", &asked)}).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := call(t, cs, "wipe", map[string]any{"target": "db-1"})
		cs.Close()
		hs.Close()
		if err != nil {
			t.Fatal(err)
		}
		want, wantCode := int64(1), ""
		if !viaGateway {
			want, wantCode = 0, "CONFIRMATION_REQUIRED"
		}
		if asked.Load() != want || down.calls.Load() != want || errorCode(t, res) != wantCode {
			t.Errorf("via gateway %v: asked %d, ran %d, code %q; want %d, %d, %q", viaGateway, asked.Load(), down.calls.Load(), errorCode(t, res), want, want, wantCode)
		}
	}
}

// gatewayRT sends each request as mcpguard's gateway forwards alice's.
type gatewayRT struct{}

func (gatewayRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(token.HeaderSubject, "alice")
	r.Header.Set(token.HeaderRole, "user")
	return http.DefaultTransport.RoundTrip(r)
}
