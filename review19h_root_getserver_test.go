package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review19hNoteServer returns a server with a raw "note" tool.
func review19hNoteServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("noted"), nil
	})
	return s
}

// review19hSession connects a client to the streamable HTTP endpoint url.
func review19hSession(t *testing.T, url string) (*mcp.ClientSession, error) {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// The go-sdk's getServer may build a server per session, or per request
// when stateless. As the Install doc says, one Guard cannot be installed
// on each (the second Install is an error), and a Guard per server, made
// from the same Options, shares their limits and audit trail.
func TestReview19hServerPerSession(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "note", Class: policy.Write, Cost: 1}},
		WriteAllowlist: []string{"note"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("one_guard", func(t *testing.T) {
		g, err := mcpguard.New(pol, fixed(alice), &mcpguard.Options{Logger: quiet, Audit: &memSink{}})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var errs []error
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			s := review19hNoteServer()
			if err := g.Install(s); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return nil // a 400: the server is not served unguarded
			}
			return s
		}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
		defer hs.Close()
		// Stateless: each request is served by a server getServer builds,
		// so the session's second request meets the refused Install.
		cs, err := review19hSession(t, hs.URL)
		if err == nil {
			_, err = call(t, cs, "note", map[string]any{})
		}
		if err == nil {
			t.Errorf("a session whose requests reach several servers of one Guard: served, want refused")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "make a Guard per server") {
			t.Errorf("Install errors: %v, want one that says to make a Guard per server", errs)
		}
	})
	t.Run("guard_per_server", func(t *testing.T) {
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		opts := &mcpguard.Options{Logger: quiet, Audit: sink, Limiter: lim}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			s := review19hNoteServer()
			g, err := mcpguard.New(pol, fixed(alice), opts)
			if err != nil {
				t.Error(err)
				return nil
			}
			if err := g.Install(s); err != nil {
				t.Error(err)
				return nil
			}
			return s
		}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
		defer hs.Close()
		var codes []string
		for range 2 {
			cs, err := review19hSession(t, hs.URL)
			if err != nil {
				t.Fatal(err)
			}
			res, err := call(t, cs, "note", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, errorCode(t, res))
		}
		if strings.Join(codes, ",") != ","+string(mcpguard.CodeRateLimitExceeded) {
			t.Errorf("one call on each of two servers, each with its own Guard, sharing a limit of 1: codes %q, want [\"\" %q]", codes, mcpguard.CodeRateLimitExceeded)
		}
		if got := phases(sink.all()); len(got) < 3 {
			t.Errorf("shared audit sink: records %v, want both calls'", got)
		}
	})
}
