package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review19Guard is a guard for one write tool, "note" (cost 1, limit 1 a
// minute per subject), whose authenticator takes every request as alice's:
// a stdio server's way, which lets Install's own listing of the tools
// through a guard already installed.
func review19Guard(t *testing.T, sink *memSink) *mcpguard.Guard {
	t.Helper()
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "note", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"note"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(alice), &mcpguard.Options{Logger: quiet, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// review19Note adds a raw "note" tool with schema to s; ran counts its runs
// and args keeps the last arguments it ran with.
func review19Note(s *mcp.Server, schema string, ran *atomic.Int64, args *atomic.Value) {
	s.AddTool(&mcp.Tool{Name: "note", InputSchema: json.RawMessage(schema)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		args.Store(string(req.Params.Arguments))
		return textResult("noted"), nil
	})
}

func phases(events []audit.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Phase))
	}
	return out
}

// A second Install of a guard on the server it guards ran the pipeline
// twice per call: two intent records, two outcome records, and the cost
// charged twice. It is refused, and the pipeline runs once.
func TestReview19InstallTwiceOnOneServerRefused(t *testing.T) {
	sink := &memSink{}
	g := review19Guard(t, sink)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var ran atomic.Int64
	var args atomic.Value
	review19Note(srv, `{"type":"object"}`, &ran, &args)
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	err := g.Install(srv)
	if err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Errorf("second Install on the same server: %v, want an error saying the guard is already installed", err)
	}
	cs := connectPlain(t, srv, nil)
	res, err := call(t, cs, "note", map[string]any{})
	if err != nil || res.IsError || ran.Load() != 1 {
		t.Fatalf("note: %+v, %v, ran %d times", res, err, ran.Load())
	}
	if got := phases(sink.all()); strings.Join(got, ",") != "intent,outcome" {
		t.Errorf("one call after a second Install: records %v, want [intent outcome] (the pipeline ran more than once)", got)
	}
}

// One guard installed on two servers kept one registry of tools for both:
// a call on the first server was checked against the schema of the second
// server's tool of the same name, and ran with arguments its own schema
// forbids. A guard guards one server: the second Install is refused.
func TestReview19InstallOnSecondServerRefused(t *testing.T) {
	g := review19Guard(t, &memSink{})
	var ranA, ranB atomic.Int64
	var argsA, argsB atomic.Value
	a := mcp.NewServer(&mcp.Implementation{Name: "a", Version: "1"}, nil)
	review19Note(a, `{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"]}`, &ranA, &argsA)
	b := mcp.NewServer(&mcp.Implementation{Name: "b", Version: "1"}, nil)
	review19Note(b, `{"type":"object","properties":{"n":{"type":"integer"}}}`, &ranB, &argsB)
	if err := g.Install(a); err != nil {
		t.Fatal(err)
	}
	if err := g.Install(b); err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Errorf("Install on a second server: %v, want an error saying the guard is already installed", err)
	}
	cs := connectPlain(t, a, nil)
	res, err := call(t, cs, "note", map[string]any{"n": 99})
	if err != nil {
		t.Fatal(err)
	}
	if ranA.Load() != 0 || errorCode(t, res) != "INVALID_ARGUMENTS" {
		t.Errorf("note {n:99} on server a (maximum 5): code %q, handler ran with %v; want INVALID_ARGUMENTS and no run", errorCode(t, res), argsA.Load())
	}
}

// An Install that fails (a tool without a rule) installs nothing, so the
// guard may be installed once the server is put right.
func TestReview19FailedInstallMayBeRepeated(t *testing.T) {
	sink := &memSink{}
	g := review19Guard(t, sink)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var ran atomic.Int64
	var args atomic.Value
	review19Note(srv, `{"type":"object"}`, &ran, &args)
	srv.AddTool(&mcp.Tool{Name: "norule", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("x"), nil
	})
	if err := g.Install(srv); err == nil {
		t.Fatal("Install of a server with a tool without a rule succeeded")
	}
	srv.RemoveTools("norule")
	if err := g.Install(srv); err != nil {
		t.Fatalf("Install after the failed one: %v", err)
	}
	cs := connectPlain(t, srv, nil)
	if res, err := call(t, cs, "note", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("note: %+v, %v", res, err)
	}
	if got := phases(sink.all()); strings.Join(got, ",") != "intent,outcome" {
		t.Errorf("records %v, want [intent outcome]", got)
	}
}

// Guard.AddTool on the server the guard is installed on guarded the tool
// twice (Install guards every tool, added later too): it is refused, and
// the tool is not added.
func TestReview19AddToolOnInstalledServerRefused(t *testing.T) {
	sink := &memSink{}
	g := review19Guard(t, sink)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	err := g.AddTool(srv, &mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		return textResult("noted"), nil
	})
	if err == nil || !strings.Contains(err.Error(), "installed") {
		t.Errorf("Guard.AddTool on a server the guard is installed on: %v, want an error", err)
	}
	cs := connectPlain(t, srv, nil)
	if _, err := cs.ListTools(context.Background(), nil); err != nil { // the guard lists the tools anew
		t.Fatal(err)
	}
	res, cerr := call(t, cs, "note", map[string]any{})
	if err != nil {
		// Not added: the go-sdk's own answer for a tool it does not have.
		if we := wireError(cerr); we == nil || !strings.Contains(we.Message, "unknown tool") || ran.Load() != 0 {
			t.Errorf("note after a refused AddTool: %+v, %v, ran %d; want the go-sdk's unknown tool error", res, cerr, ran.Load())
		}
		return
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	{
		if got := phases(sink.all()); strings.Join(got, ",") != "intent,outcome" {
			t.Errorf("one call: records %v, want [intent outcome] (the pipeline ran more than once)", got)
		}
	}
}

// Install on a server that Guard.AddTool added a tool to ran that tool's
// pipeline twice per call (the wrapped handler's and Install's): it is
// refused.
func TestReview19InstallAfterAddToolRefused(t *testing.T) {
	sink := &memSink{}
	g := review19Guard(t, sink)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var ran atomic.Int64
	if err := g.AddTool(srv, &mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		return textResult("noted"), nil
	}); err != nil {
		t.Fatal(err)
	}
	err := g.Install(srv)
	if err == nil || !strings.Contains(err.Error(), "AddTool") {
		t.Errorf("Install on a server Guard.AddTool added a tool to: %v, want an error naming AddTool", err)
	}
	cs := connectPlain(t, srv, nil)
	if res, err := call(t, cs, "note", map[string]any{}); err != nil || res.IsError || ran.Load() != 1 {
		t.Fatalf("note: %+v, %v, ran %d", res, err, ran.Load())
	}
	if got := phases(sink.all()); strings.Join(got, ",") != "intent,outcome" {
		t.Errorf("one call: records %v, want [intent outcome] (the pipeline ran more than once)", got)
	}
}
