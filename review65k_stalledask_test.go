package mcpguard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The guard's question to confirm a write, asked of an older client
// inside the call, "is waited for until the state expires (then the call
// is refused, CONFIRMATION_REQUIRED)" (Options.Confirmer), and AddTool
// promises that what a handler asks the client within a write ends when
// the write's caller cancels. Under Guard.Install the guard's sending
// middleware (askBounded) stops waiting when the question's context ends,
// even while the go-sdk still writes. These checks ask the same of a
// handler guarded by Guard.Wrap (no sending middleware) and by
// Guard.AddTool (askingClient) over a stream transport whose client stops
// reading: while the question is written (the request's own write never
// ends: a stream's write does not end with a context) or after it took
// the question (under MCPGODEBUG=blockingcancelnotify=1 go-sdk v1.8.0
// writes the notifications/cancelled of the ended request on the sender's
// goroutine, unbounded). The AddTool cases failed before askingClient
// waited through askBounded; the Wrap cases fail until the guard bounds its
// question where it sends it (confirmStep, serve.go), whatever middleware
// the server has.
var review65kCases = []struct {
	name  string
	mode  string // "wrap": srv.AddTool(Wrap(...)); "addtool": g.AddTool; "install"
	tool  string // "pay": the guard's question; "ask": the handler's own
	after bool   // the client reads the question, then stops; else stops a byte into it
}{
	{"WrapConfirmMidWrite", "wrap", "pay", false},
	{"WrapConfirmAfter", "wrap", "pay", true},
	{"AddToolConfirmMidWrite", "addtool", "pay", false},
	{"AddToolConfirmAfter", "addtool", "pay", true},
	{"AddToolHandlerAskMidWrite", "addtool", "ask", false},
	{"AddToolHandlerAskAfter", "addtool", "ask", true},
	// Controls: under Install (askBounded) these pass.
	{"InstallConfirmMidWrite", "install", "pay", false},
	{"InstallConfirmAfter", "install", "pay", true},
}

// TestReview65kStalledAsk runs the checks with the go-sdk's default.
func TestReview65kStalledAsk(t *testing.T) {
	if os.Getenv("MCPGODEBUG") != "" {
		t.Skip("MCPGODEBUG is set")
	}
	for _, c := range review65kCases {
		t.Run(c.name, func(t *testing.T) {
			review65kStalledAsk(t, c.mode, c.tool, c.after)
		})
	}
}

// TestReview65kStalledAskBlockingCancel runs them under
// MCPGODEBUG=blockingcancelnotify=1, read at start: each in a child process.
func TestReview65kStalledAskBlockingCancel(t *testing.T) {
	for _, c := range review65kCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runGodebugChild(t, "TestReview65kStalledAskChild/"+c.name, "blockingcancelnotify=1")
		})
	}
}

func TestReview65kStalledAskChild(t *testing.T) {
	if !inGodebugChild() {
		return // run as a child of TestReview65kStalledAskBlockingCancel only
	}
	for _, c := range review65kCases {
		t.Run(c.name, func(t *testing.T) {
			review65kStalledAsk(t, c.mode, c.tool, c.after)
		})
	}
}

func review65kStalledAsk(t *testing.T, mode, tool string, after bool) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{
			{Name: "pay", Class: policy.Write, Confirm: true},
			{Name: "ask", Class: policy.Write},
		},
		WriteAllowlist: []string{"pay", "ask"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A clock that starts at a whole second, so that a state of one
	// second's TTL (states carry whole seconds) is waited for about 1 s.
	base := time.Now()
	now := func() time.Time { return time.Unix(2_000_000_000, 0).Add(time.Since(base)) }
	sink := &memSink{}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "ann"}}, nil
	})
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: sink, Confirmer: testSigner(t, &confirm.Options{TTL: time.Second}), Now: now,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	handlers := map[string]mcp.ToolHandler{
		"pay": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		},
		"ask": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "which one?",
				RequestedSchema: obj}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
		},
	}
	for name, h := range handlers {
		tl := &mcp.Tool{Name: name, InputSchema: obj,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool)}}
		if mode == "addtool" {
			if err := g.AddTool(srv, tl, h); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if mode == "install" {
			srv.AddTool(tl, h)
			continue
		}
		wh, err := g.Wrap(tl, h)
		if err != nil {
			t.Fatal(err)
		}
		srv.AddTool(tl, wh)
	}

	if mode == "install" {
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
	}
	// An older client that supports elicitation, over a stream with no
	// buffer (net.Pipe: a write waits for the client to read it).
	sc, cc := net.Pipe()
	t.Cleanup(func() { cc.Close(); sc.Close() })
	if _, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: sc, Writer: sc}, nil); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(cc)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(cc, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the server's stream ended: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, lines.Bytes())
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"old","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
	if !after {
		// One byte of the question, whose write then waits for good.
		if _, err := io.ReadFull(cc, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for after {
		m := next()
		if m["method"] == "elicitation/create" {
			break
		}
		if m["id"] != nil && m["method"] == nil {
			t.Fatalf("the call was answered before the client was asked: %v", m)
		}
	}
	// The client reads nothing more.
	// Until the call is under way in the guard.
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		err := g.Wait(ctx)
		cancel()
		if err != nil {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatal("the call never reached the guard")
		}
	}
	if tool == "ask" {
		// A write's handler is not ended with its caller's context
		// (it is detached): its caller cancels the call, which ends the
		// handler's question (AddTool's doc).
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		if tool == "pay" {
			t.Fatalf("Wait: %v: the call is still held 3 s after its confirmation state (1 s) expired "+
				"by a client that stopped reading", err)
		}
		t.Fatalf("Wait: %v: the call is still held 3 s after its caller cancelled it, by a client "+
			"that stopped reading", err)
	}
	if tool != "pay" {
		return
	}
	for _, e := range sink.all() {
		if e.Tool == "pay" && !e.Allowed && e.Phase == audit.PhaseOutcome &&
			e.Code == string(mcpguard.CodeConfirmationRequired) {
			return
		}
	}
	t.Fatalf("no CONFIRMATION_REQUIRED record once the state expired: %+v", sink.all())
}
