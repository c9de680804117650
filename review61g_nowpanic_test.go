package mcpguard_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61gNowPanicEscapesGuard: the pipeline's first step is to
// recover from panics (doc.go, "The pipeline"), and every other user
// callback a Guard calls (Authenticator, SessionKey, Cost, Describe, a
// store, a sink, the log handler since 61d) is called under a recover.
// Options.Now is asked for the call's start time before serve's recover
// is deferred: a Now that panics (its bug) goes up out of a handler made
// by Guard.Wrap (or Guard.AddTool) to the go-sdk, which recovers none:
// the server's process ends. (Installed, the receiving middleware's
// recover answers it -32603.) A Now that panics is logged now, and
// time.Now read instead.
func TestReview61gNowPanicEscapesGuard(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	now := func() time.Time {
		if armed.Load() {
			panic("review61g: the clock's bug")
		}
		return time.Now()
	}
	sink := &r61cPanicSink{panics: func(*audit.Event) bool { return false }}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: sink, Now: now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h, err := g.Wrap(&mcp.Tool{Name: "r", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("Options.Now's panic escaped the guard (it ends a go-sdk server's process): %v", v)
		}
	}()
	// Contained: the guard reads time.Now instead (Options.Now's doc).
	res, err := h(context.Background(), r61cCall("r"))
	if err != nil || res == nil || res.IsError || ran != 1 {
		t.Errorf("a call whose clock panicked: %v %v (ran %d), want it run on time.Now", res, err, ran)
	}
	if n := len(sink.all()); n != 1 {
		t.Errorf("%d records of the call, want 1", n)
	}
}
