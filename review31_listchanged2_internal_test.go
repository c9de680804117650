package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkReview31bDueNotices1000 measures how long a check of a new
// policy holds lc.mu (which every tools/list takes for reading): 1000
// sessions on 2025-11-25 that listed 20 tools, each of them told at each
// policy (the policies alternate 20 tools for users and 10).
func BenchmarkReview31bDueNotices1000(b *testing.B) {
	mk := func(n int) *policy.Policy {
		var rules []policy.ToolRule
		for i := range 20 {
			roles := []string{"user"}
			if i >= n {
				roles = []string{"admin"}
			}
			rules = append(rules, policy.ToolRule{Name: fmt.Sprintf("t%02d", i), Class: policy.Read, Roles: roles})
		}
		p, err := policy.New(policy.Config{Tools: rules})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	pols := []*policy.Policy{mk(20), mk(10)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	for i := range 20 {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%02d", i), InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok)
	}
	user := &Identity{Principal: &policy.Principal{Subject: "u", Roles: []string{"user"}}, Credential: NewCredential("u")}
	auth := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return user, nil })
	g, err := New(pols[0], auth, &Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range 1000 {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cs.Close(); ss.Close() }()
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	t := g.lc.target.Load()
	var most time.Duration
	b.ResetTimer()
	for i := range b.N {
		g.pol.Store(pols[(i+1)%2])
		start := time.Now()
		if n := len(g.dueNotices(t)); n != 1000 {
			b.Fatalf("%d sessions due a notice, want 1000", n)
		}
		most = max(most, time.Since(start))
	}
	b.ReportMetric(float64(most.Microseconds()), "max-µs")
}
