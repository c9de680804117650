package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lcInternalRig installs a guard under pol, which takes every caller for
// bob (a user), on srv, and connects n sessions on 2025-11-25 to it, each
// of which lists the tools, or with res the resources; ss is the last,
// told counts the tools/list_changed (with res, the resources/list_changed)
// their clients heard.
func lcInternalRig(t testing.TB, srv *mcp.Server, pol *policy.Policy, n int, res bool) (g *Guard, ss *mcp.ServerSession, told *atomic.Int64) {
	bob := &Identity{Principal: &policy.Principal{Subject: "bob", Roles: []string{"user"}}, Credential: NewCredential("b")}
	auth := AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return bob, nil })
	g, err := New(pol, auth, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	told = &atomic.Int64{}
	for range n {
		ct, st := mcp.NewInMemoryTransports()
		s, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		ss = s
		copts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { told.Add(1) }}
		if res {
			copts = &mcp.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { told.Add(1) }}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); s.Close() })
		if res {
			_, err = cs.ListResources(ctx, nil)
		} else {
			_, err = cs.ListTools(ctx, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return g, ss, told
}

// benchDue measures how long due, a check of a new policy, takes on g's
// server, whose 1000 sessions are each due a notice at each policy (the
// policies alternate pols), and reports the longest.
func benchDue(b *testing.B, g *Guard, pols []*policy.Policy, due func(*notifyTarget) []notice) {
	t := g.lc.target.Load()
	var most time.Duration
	b.ResetTimer()
	for i := range b.N {
		g.pol.Store(pols[(i+1)%2])
		start := time.Now()
		if n := len(due(t)); n != 1000 {
			b.Fatalf("%d sessions due a notice, want 1000", n)
		}
		most = max(most, time.Since(start))
	}
	b.ReportMetric(float64(most.Microseconds()), "max-µs")
}

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
	g, _, _ := lcInternalRig(b, srv, pols[0], 1000, false)
	benchDue(b, g, pols, g.dueNotices)
}
