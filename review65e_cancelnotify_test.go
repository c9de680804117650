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
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview65eConfirmExpiryStalledClient: go-sdk v1.8.0 keeps a
// compatibility setting, MCPGODEBUG=blockingcancelnotify=1, under which a
// request to the client whose context ends waits for its
// notifications/cancelled to be written before it returns, and that write
// is bounded by nothing once under way (a stream's write does not end with
// a context). The guard asks an older client's human to confirm with such
// a request, "whose answer is waited for until the state expires (then the
// call is refused, CONFIRMATION_REQUIRED)" (Options.Confirmer); and Wait
// promises that a client that stopped reading holds a call no longer. A
// client that took the question and then stopped reading (a hung UI)
// holds the call for good under the setting: the state expires, no
// refusal is recorded, Wait never returns. The setting is read at start,
// so the check runs in a child process; the same check passes without it
// (TestReview65eConfirmExpiryStalledClientDefault).
func TestReview65eConfirmExpiryStalledClient(t *testing.T) {
	runGodebugChild(t, "TestReview65eConfirmExpiryStalledChild", "blockingcancelnotify=1")
}

func TestReview65eConfirmExpiryStalledChild(t *testing.T) {
	if !inGodebugChild() {
		return // run as the child of TestReview65eConfirmExpiryStalledClient only
	}
	review65eConfirmExpiry(t)
}

// TestReview65eConfirmExpiryStalledClientDefault is the same check with
// the go-sdk's default (the notification sent off the caller's path).
func TestReview65eConfirmExpiryStalledClientDefault(t *testing.T) {
	if os.Getenv("MCPGODEBUG") != "" {
		t.Skip("MCPGODEBUG is set")
	}
	review65eConfirmExpiry(t)
}

func review65eConfirmExpiry(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "pay", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"pay"},
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
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}

	r65eStalledAfterElicit(t, srv, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pay","arguments":{}}}`)
	// The client took the question, and now reads nothing more.

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v: the call is still held 3 s after its confirmation state (1 s) expired; a client that stopped reading holds it", err)
	}
	var refused bool
	for _, e := range sink.all() {
		if e.Tool == "pay" && !e.Allowed && e.Phase == audit.PhaseOutcome && e.Code == string(mcpguard.CodeConfirmationRequired) {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("no CONFIRMATION_REQUIRED record once the state expired: %+v", sink.all())
	}
}

// r65eStalledAfterElicit connects an older client that supports
// elicitation to srv over a stream transport with no buffer (net.Pipe: a
// write waits for the client to read it), sends call, reads until the
// server asks an elicitation/create, and then reads nothing more.
func r65eStalledAfterElicit(t *testing.T, srv *mcp.Server, call string) {
	t.Helper()
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
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"old","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(call)
	for {
		m := next()
		if m["method"] == "elicitation/create" {
			return
		}
		if m["id"] != nil && m["method"] == nil {
			t.Fatalf("the call was answered before the client was asked: %v", m)
		}
	}
}

// TestReview65eHandlerAskStalledClient: under the same setting, a tool
// handler that asks its client (req.Session.Elicit with the call's
// context, as the go-sdk's examples do) is held past Options.Timeout (which
// "bounds the handler") by a client that took the question and stopped
// reading: the go-sdk writes notifications/cancelled on the handler's
// goroutine, unbounded, outside the guard's sending middleware, whose
// notifyWait bound is what Wait promises ("such a client holds its call,
// its in-flight slot and Wait no longer"). The user's in-flight slot stays
// taken: every later call of theirs, on any session, is refused
// CONCURRENCY_LIMIT_EXCEEDED, for as long as the client keeps its stream.
func TestReview65eHandlerAskStalledClient(t *testing.T) {
	runGodebugChild(t, "TestReview65eHandlerAskStalledChild", "blockingcancelnotify=1")
}

func TestReview65eHandlerAskStalledChild(t *testing.T) {
	if !inGodebugChild() {
		return // run as the child of TestReview65eHandlerAskStalledClient only
	}
	review65eHandlerAsk(t)
}

// TestReview65eHandlerAskStalledClientDefault is the same check with the
// go-sdk's default.
func TestReview65eHandlerAskStalledClientDefault(t *testing.T) {
	if os.Getenv("MCPGODEBUG") != "" {
		t.Skip("MCPGODEBUG is set")
	}
	review65eHandlerAsk(t)
}

func review65eHandlerAsk(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{
		{Name: "ask", Class: policy.Read}, {Name: "ping", Class: policy.Read},
	}})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "ann"}}, nil
	})
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{
		Audit: &memSink{}, Limiter: lim, Timeout: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "which one?",
				RequestedSchema: map[string]any{"type": "object"}}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "ping", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	r65eStalledAfterElicit(t, srv, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)

	// The call's deadline (300 ms) passes; Wait gives it 2 s to end.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	waitErr := g.Wait(ctx)

	// Ann, on another session of her own.
	st, ct := mcp.NewInMemoryTransports()
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
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ping", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if code := errorCode(t, res); code != "" || waitErr != nil {
		t.Fatalf("2 s after the call's 300 ms deadline: Wait: %v; ann's next call refused %q: the stalled client holds her in-flight slot", waitErr, code)
	}
}
