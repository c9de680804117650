package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review51ToolsBelow makes tools/list below the guard on srv answer with
// answer(the request's cursor) once on is set; until then (Install's own
// listing) the server answers. Call it before a guard is installed on srv.
func review51ToolsBelow(srv *mcp.Server, on *atomic.Bool, answer func(cursor string) (mcp.Result, error)) {
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" || !on.Load() {
				return next(ctx, method, req)
			}
			cursor := ""
			if p, _ := req.GetParams().(*mcp.ListToolsParams); p != nil {
				cursor = p.Cursor
			}
			return answer(cursor)
		}
	})
}

// TestReview51ToolPagesBounded: the guard pages through the server's
// tools/list to answer one, up to 1000 pages: a listing of 1000 pages is
// answered, in one page; one that goes on past them is refused after the
// 1000th page is read.
func TestReview51ToolPagesBounded(t *testing.T) {
	for _, pages := range []int{1000, 1001} {
		t.Run(strconv.Itoa(pages), func(t *testing.T) {
			var on atomic.Bool
			var asked atomic.Int64
			srv := review26Server(true, nil)
			review51ToolsBelow(srv, &on, func(cursor string) (mcp.Result, error) {
				asked.Add(1)
				i, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c"))
				res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
				if i+1 < pages {
					res.NextCursor = fmt.Sprintf("c%d", i+1)
				}
				return res, nil
			})
			h := review26Guard(t, srv)
			on.Store(true)
			resp := review26Connect(t, h, bob, true).response("tools/list", `{}`)
			_, listed, cursor, errMsg := listAnswer(t, resp, "tools")
			if pages > 1000 {
				if listed || !strings.Contains(errMsg, "did not terminate") {
					t.Errorf("tools/list of %d pages: %s; want only an error, that it did not terminate", pages, resp)
				}
				if n := asked.Load(); n != 1000 {
					t.Errorf("tools/list of %d pages: %d pages asked for, want 1000", pages, n)
				}
				return
			}
			if !listed || cursor != "" || asked.Load() != 1000 {
				t.Errorf("tools/list of %d pages: %s, %d pages asked for; want a result of one page", pages, resp, asked.Load())
			}
		})
	}
}

// TestReview51ToolListingFails: when the server's tools/list below the
// guard fails, or answers with something that is not a listing of tools,
// a caller's tools/list fails with that error, or as an unexpected result:
// never with an empty listing.
func TestReview51ToolListingFails(t *testing.T) {
	for name, a := range map[string]struct {
		res  mcp.Result
		err  error
		want string
	}{
		"error":      {nil, errors.New("review51: tools/list is down"), "tools/list is down"},
		"other_type": {&mcp.ListResourcesResult{}, nil, "tools/list returned an unexpected result"},
	} {
		var on atomic.Bool
		srv := review26Server(true, nil)
		review51ToolsBelow(srv, &on, func(string) (mcp.Result, error) { return a.res, a.err })
		h := review26Guard(t, srv)
		on.Store(true)
		what := "tools/list answered below with " + name
		if _, msg := review43aError(t, what, review26Connect(t, h, bob, true).response("tools/list", `{}`)); !strings.Contains(msg, a.want) {
			t.Errorf("%s: message %q, want %q", what, msg, a.want)
		}
	}
}

// TestReview51InstallListingFails: Install lists the server's tools
// first, through the server's own middleware; when that listing fails, or
// the handshake before it does, Install fails saying so and guards
// nothing: it never installs with no tools checked.
func TestReview51InstallListingFails(t *testing.T) {
	// A client that cannot discover the server falls back to initialize:
	// the handshake fails when both do.
	for name, down := range map[string][]string{"listing": {"tools/list"}, "handshake": {"server/discover", "initialize"}} {
		method := down[len(down)-1]
		srv := review26Server(true, nil)
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
				if slices.Contains(down, m) {
					return nil, errors.New("review51: " + m + " is down")
				}
				return next(ctx, m, req)
			}
		})
		pol, err := policy.New(uiPolicy())
		if err != nil {
			t.Fatal(err)
		}
		g, err := mcpguard.New(pol, &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}, &mcpguard.Options{Logger: quiet, Confirmer: testSigner(t, nil)})
		if err != nil {
			t.Fatal(err)
		}
		err = g.Install(srv)
		if err == nil || !strings.Contains(err.Error(), "listing the server's tools") || !strings.Contains(err.Error(), method+" is down") {
			t.Errorf("%s: Install = %v; want the listing's failure", name, err)
		}
	}
}

// listAnswer reads resp, a JSON-RPC answer to a listing: the items under
// key in its result, whether it has a result, its next cursor, and its
// error's message ("" without one).
func listAnswer(t *testing.T, resp, key string) (items []json.RawMessage, listed bool, cursor, errMsg string) {
	t.Helper()
	var m struct {
		Result map[string]json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp), &m); err != nil {
		t.Fatalf("%s: %v", resp, err)
	}
	if m.Error != nil {
		errMsg = m.Error.Message
	}
	if m.Result == nil {
		return nil, false, "", errMsg
	}
	if raw, ok := m.Result[key]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			t.Fatalf("%s: %v", resp, err)
		}
	}
	if raw, ok := m.Result["nextCursor"]; ok {
		if err := json.Unmarshal(raw, &cursor); err != nil {
			t.Fatalf("%s: %v", resp, err)
		}
	}
	return items, true, cursor, errMsg
}
