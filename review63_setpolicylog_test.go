package mcpguard_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r63BlockingHandler is a slog.Handler whose writes wait for release (a
// handler writing to a pipe nobody reads): it says on entered when one
// began.
type r63BlockingHandler struct {
	entered chan struct{}
	release chan struct{}
}

func (h r63BlockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h r63BlockingHandler) Handle(context.Context, slog.Record) error {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
	return nil
}
func (h r63BlockingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h r63BlockingHandler) WithGroup(string) slog.Handler      { return h }

// TestReview63SetPolicyWarnsOutsideLocks: SetPolicy's warning that a
// policy allows writes without a trail went to the logger while SetPolicy
// held the guard's locks, so a handler that blocked (its pipe full) held
// every Wrap, AddTool and listing that waits for them, for as long as it
// blocked. The warning is logged once the policy is set and the locks
// given back.
func TestReview63SetPolicyWarnsOutsideLocks(t *testing.T) {
	h := r63BlockingHandler{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(h.release)
	cfg := policy.Config{Tools: []policy.ToolRule{
		{Name: "echo", Class: policy.Read},
		{Name: "add_note", Class: policy.Write},
	}}
	p0, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(p0, auth, &mcpguard.Options{Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.WriteAllowlist = []string{"add_note"} // no Options.Audit: the warning
	p1, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	set := make(chan error, 1)
	go func() { set <- g.SetPolicy(p1) }()
	select {
	case <-h.entered:
	case err := <-set:
		t.Fatalf("SetPolicy returned %v without a warning", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no warning logged")
	}
	if g.Policy() != p1 {
		t.Error("the policy is not set while its warning is logged")
	}
	wrapped := make(chan error, 1)
	go func() {
		_, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		wrapped <- err
	}()
	select {
	case err := <-wrapped:
		if err != nil {
			t.Errorf("Wrap: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("Wrap waited for SetPolicy's blocked log handler")
	}
}

// r63ArmedHandler is r63BlockingHandler for the records whose message
// holds a word, once armed: the others pass.
type r63ArmedHandler struct {
	r63BlockingHandler
	armed *atomic.Bool
	word  string
}

func (h r63ArmedHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.armed.Load() || !strings.Contains(r.Message, h.word) {
		return nil
	}
	return h.r63BlockingHandler.Handle(ctx, r)
}
func (h r63ArmedHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h r63ArmedHandler) WithGroup(string) slog.Handler      { return h }

// TestReview63RefusedToolLoggedOutsideLocks: a tool the server added after
// Install that the policy refuses is logged when the guard lists it; the
// log line was written under the registry's lock, which every call takes,
// so a handler that blocked held every caller's calls, not only the one
// whose call listed the tools.
func TestReview63RefusedToolLoggedOutsideLocks(t *testing.T) {
	h := r63ArmedHandler{
		r63BlockingHandler: r63BlockingHandler{entered: make(chan struct{}, 1), release: make(chan struct{})},
		armed:              new(atomic.Bool),
		word:               "tool refused",
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.release)
		}
	}
	defer release()
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(p, auth, &mcpguard.Options{Logger: slog.New(h), Audit: &memSink{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "r63", Version: "1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, handler)
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	a, b := connectVersion(t, srv, nil, ""), connectVersion(t, srv, nil, "")
	h.armed.Store(true)
	srv.AddTool(&mcp.Tool{Name: "unruled", InputSchema: map[string]any{"type": "object"}}, handler) // no rule: refused
	// a calls until one of its calls lists the tools (once the guard has
	// seen the change, or a second after its last listing) and blocks
	// in the log handler.
	first := make(chan error, 1)
	for listed := false; !listed; {
		go func() {
			_, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
			first <- err
		}()
		select {
		case <-h.entered:
			listed = true
		case err := <-first:
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		case <-time.After(5 * time.Second):
			t.Fatal("the refused tool was not logged")
		}
	}
	second := make(chan error, 1)
	go func() {
		_, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"})
		second <- err
	}()
	select {
	case err := <-second:
		if err != nil {
			t.Errorf("the other caller's call: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("another caller's call waited for the log handler that blocked the listing's")
	}
	release()
	if err := <-first; err != nil {
		t.Errorf("the listing caller's call: %v", err)
	}
}
