package mcpguard

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rnInternalRig is a server with report_app, whose UI resource a policy
// shows to users or to admins only, a guard installed on it under pol,
// and n sessions of bob's on 2025-11-25 that listed the resources (see
// lcInternalRig).
func rnInternalRig(t testing.TB, pol *policy.Policy, n int) (g *Guard, ss *mcp.ServerSession, told *atomic.Int64) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rn", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "report_app", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://report/app"}}}, ok)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
	}
	srv.AddResource(&mcp.Resource{URI: "ui://report/app", Name: "app"}, read)
	return lcInternalRig(t, srv, pol, n, true)
}

func rnInternalPolicy(t testing.TB, roles ...string) *policy.Policy {
	p, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "report_app", Class: policy.Read, Roles: roles}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReview32ListingOvertakenByCheck: a resources/list filtered by the
// policy before a SetPolicy, whose view is recorded after the SetPolicy's
// check read the session's, has the session checked again: its client is
// told that its listing changed.
func TestReview32ListingOvertakenByCheck(t *testing.T) {
	pu, pa := rnInternalPolicy(t, "user"), rnInternalPolicy(t, "admin")
	g, ss, told := rnInternalRig(t, pu, 1)
	_, shown, _, ok := shownView(&g.res.sessionViews, ss)
	if !ok || shown.pol != pu {
		t.Fatalf("the session's view: %v %v", shown, ok)
	}
	// A listing reads its sequence number and loads pu; a SetPolicy's
	// check for pa runs meanwhile (and tells the session); then the
	// listing records what pu showed.
	seq := g.res.seen(ss, &policy.Principal{Subject: "bob", Roles: []string{"user"}})
	if err := g.SetPolicy(pa); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for told.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("not told of pa")
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.res.show(ss, seq, shown)
	g.shownUnder(shown.pol)
	for told.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("a listing of pu recorded after pa's check: its client was not told again")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkReview32DueResourceNotices1000 measures a check of a new
// policy's resources notices: 1000 sessions on 2025-11-25 that listed the
// resources, each due a notice at each policy (the policies alternate
// report_app, and its UI resource, for users and for admins only).
func BenchmarkReview32DueResourceNotices1000(b *testing.B) {
	pols := []*policy.Policy{rnInternalPolicy(b, "user"), rnInternalPolicy(b, "admin")}
	g, _, _ := rnInternalRig(b, pols[0], 1000)
	benchDue(b, g, pols, func(t *notifyTarget) []notice { return g.dueResourceNotices(t) })
}
