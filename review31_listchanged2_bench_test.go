package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkReview31bListTools measures a guarded tools/list of 20 tools
// over an in-memory transport, from 8 sessions at once.
func BenchmarkReview31bListTools(b *testing.B) {
	var rules []policy.ToolRule
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	for i := range 20 {
		name := fmt.Sprintf("t%02d", i)
		rules = append(rules, policy.ToolRule{Name: name, Class: policy.Read, Roles: []string{"user"}})
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro}, ok)
	}
	p, err := policy.New(policy.Config{Tools: rules})
	if err != nil {
		b.Fatal(err)
	}
	g, err := mcpguard.New(p, fixed(bob), &mcpguard.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var css []*mcp.ClientSession
	for range 8 {
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
		css = append(css, cs)
	}
	next := make(chan *mcp.ClientSession, len(css))
	for _, cs := range css {
		next <- cs
	}
	b.ReportAllocs()
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		cs := <-next
		for pb.Next() {
			res, err := cs.ListTools(ctx, nil)
			if err != nil || len(res.Tools) != 20 {
				b.Errorf("ListTools: %v tools, %v", len(res.Tools), err)
				return
			}
		}
	})
}
