package mcpguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64gZeroGuardRefused: "The zero Guard is not usable: make one
// with New", but a zero Guard (var g mcpguard.Guard, a Guard field of a
// struct) was taken by Install, which returned nil, and the server's first
// tools/list then panicked on the SDK's goroutine and ended the process;
// Wrap returned a handler that panicked at its first call, and SetPolicy
// panicked. Each must refuse it with an error, as the zero sinks, signers
// and stores of the other packages do.
func TestReview64gZeroGuardRefused(t *testing.T) {
	tool := &mcp.Tool{Name: "r", InputSchema: map[string]any{"type": "object"}}
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, f func() error) {
		t.Helper()
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("%s on a zero Guard panicked: %v", what, v)
			}
		}()
		if err := f(); err == nil {
			t.Errorf("%s on a zero Guard: no error", what)
		}
	}
	check("Install", func() error {
		var g mcpguard.Guard
		return g.Install(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil))
	})
	check("Wrap", func() error {
		var g mcpguard.Guard
		_, err := g.Wrap(tool, h)
		return err
	})
	check("AddTool", func() error {
		var g mcpguard.Guard
		return g.AddTool(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), tool, h)
	})
	check("SetPolicy", func() error {
		var g mcpguard.Guard
		return g.SetPolicy(p)
	})
}

// TestReview64gZeroSignerRefused: New refuses a policy with a tool that
// needs confirmation and no Options.Confirmer, and confirm.NewSigner
// refuses a zero MemoryNonceStore, but New took a zero *confirm.Signer
// (&confirm.Signer{}, not made by NewSigner: it has no key and issues no
// state). Every call of a confirmed tool then failed INTERNAL "the
// confirmation could not be prepared", at run time, for every caller.
func TestReview64gZeroSignerRefused(t *testing.T) {
	p, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "w", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"w"},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "u"}}, nil
	})
	if _, err := mcpguard.New(p, auth, &mcpguard.Options{Audit: &memSink{}, Confirmer: &confirm.Signer{}}); err == nil {
		t.Error("New takes a zero confirm.Signer as Options.Confirmer")
	}
	if _, err := mcpguard.Confirm(&confirm.Signer{}, p, nil); err == nil {
		t.Error("Confirm takes a zero confirm.Signer")
	}
}

// TestReview64NilPointerSinkRefused: a *audit.JSONLSink whose OpenJSONL
// failed, given on as Options.Audit (or to the Audit and WriteAhead steps),
// is a non-nil interface holding a nil pointer: New took it for a sink,
// every record then failed (ErrClosed), and each read was answered with no
// record of it. New and the steps refuse it, naming its type.
func TestReview64NilPointerSinkRefused(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "u"}}, nil
	})
	var sink *audit.JSONLSink
	for what, err := range map[string]error{
		"New":        func() error { _, err := mcpguard.New(p, auth, &mcpguard.Options{Audit: sink}); return err }(),
		"Audit":      func() error { _, err := mcpguard.Audit(sink, nil); return err }(),
		"WriteAhead": func() error { _, err := mcpguard.WriteAhead(sink, p, nil); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "nil *audit.JSONLSink") {
			t.Errorf("%s with a nil *audit.JSONLSink: %v, want an error naming it", what, err)
		}
	}
}
