package mcpguard_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Install and Guard.AddTool on one server at once: exactly one of them
// takes the server, and a call runs the pipeline once (run with -race).
func TestReview19hInstallAndAddToolConcurrently(t *testing.T) {
	for i := range 20 {
		sink := &memSink{}
		g := review19Guard(t, sink)
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		var ran atomic.Int64
		var instErr, addErr error
		var wg sync.WaitGroup
		wg.Go(func() { instErr = g.Install(srv) })
		wg.Go(func() {
			addErr = g.AddTool(srv, &mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ran.Add(1)
				return textResult("noted"), nil
			})
		})
		wg.Wait()
		if (instErr == nil) == (addErr == nil) {
			t.Fatalf("round %d: Install: %v; AddTool: %v; want exactly one to fail", i, instErr, addErr)
		}
		cs := connectPlain(t, srv, nil)
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		res, err := call(t, cs, "note", map[string]any{})
		if addErr != nil {
			// Install won: the tool was never added.
			if err == nil && !res.IsError || ran.Load() != 0 {
				t.Errorf("round %d: note after a refused AddTool: %+v, %v, ran %d; want no run", i, res, err, ran.Load())
			}
			continue
		}
		if err != nil || res.IsError || ran.Load() != 1 {
			t.Fatalf("round %d: note: %+v, %v, ran %d", i, res, err, ran.Load())
		}
		if got := phases(sink.all()); strings.Join(got, ",") != "intent,outcome" {
			t.Errorf("round %d: one call: records %v, want [intent outcome]", i, got)
		}
	}
}

// Servers Guard.AddTool added to are forgotten by a runtime cleanup, which
// may run while Install runs: Install on a fresh server still succeeds,
// and on a live server AddTool added to is still refused (run with -race).
func TestReview19hCleanupDuringInstall(t *testing.T) {
	g := review19Guard(t, &memSink{})
	tool := &mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)}
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("noted"), nil
	}
	kept := mcp.NewServer(&mcp.Implementation{Name: "kept", Version: "1"}, nil)
	if err := g.AddTool(kept, tool, h); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 20 {
				s := mcp.NewServer(&mcp.Implementation{Name: "gone", Version: "1"}, nil)
				if err := g.AddTool(s, tool, h); err != nil {
					t.Error(err)
					return
				}
			}
			runtime.GC()
		}
	})
	for range 20 {
		if err := g.Install(kept); err == nil || !strings.Contains(err.Error(), "AddTool") {
			t.Errorf("Install on a live server AddTool added to: %v, want an error naming AddTool", err)
			break
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(tool, h)
	err := g.Install(srv)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Install on a fresh server while cleanups run: %v", err)
	}
	runtime.KeepAlive(kept)
}
