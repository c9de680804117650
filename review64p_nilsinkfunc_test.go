package mcpguard_test

import (
	"context"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview64pNilSinkFuncRefused: 63ac475 makes New, Audit and WriteAhead
// refuse an audit sink that is a nil pointer in a non-nil interface (the
// typed-nil trap: every record would fail). The audit package's own
// adapter, audit.SinkFunc, falls in the same trap (a `var f
// audit.SinkFunc` left unset, given on as Options.Audit) and is taken:
// nilSink looks at pointers only, and each record then calls a nil
// function: it panics, and no record is ever written.
func TestReview64pNilSinkFuncRefused(t *testing.T) {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "r", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) {
		return &mcpguard.Identity{Principal: &policy.Principal{Subject: "u"}}, nil
	})
	var sink audit.SinkFunc
	for what, err := range map[string]error{
		"New":        func() error { _, err := mcpguard.New(p, auth, &mcpguard.Options{Audit: sink}); return err }(),
		"Audit":      func() error { _, err := mcpguard.Audit(sink, nil); return err }(),
		"WriteAhead": func() error { _, err := mcpguard.WriteAhead(sink, p, nil); return err }(),
	} {
		if err == nil {
			t.Errorf("%s with a nil audit.SinkFunc: accepted, want refused as a nil *audit.JSONLSink is", what)
		}
	}
}
