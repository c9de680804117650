package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handlerTransport is an Options.Transport that serves every request with
// h in process, as a program that puts two gateways in one process could.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestReview16aCheckPinsCallerStaysHome: the caller CheckPins lists as is
// taken only by the gateway whose CheckPins made the request. The
// requests a gateway sends downstream carry their client's context, so a
// second gateway served in process downstream of the first (its
// Transport) read the first one's CheckPins caller from it, and served
// the listing without a token, as that caller: it must answer 401, as to
// any request without a token.
func TestReview16aCheckPinsCallerStaysHome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var runs atomic.Int64
	srv, _ := pinnedServer(&runs)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	var subjects atomic.Int64
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSubject) != "" {
			subjects.Add(1)
		}
		sdk.ServeHTTP(w, r)
	}))
	inner, err := New(down.URL, DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	outer, err := New("http://inner.invalid/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), Transport: handlerTransport{inner}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := outer.CheckPins(ctx, &policy.Principal{Subject: "pin-check", Roles: []string{"admin"}})
	if err == nil {
		t.Errorf("CheckPins through a second gateway that has no token for it: %d tools, no error; want its 401", n)
	}
	if k := subjects.Load(); k != 0 {
		t.Errorf("the second gateway forwarded %d requests it got without a token", k)
	}
}

// TestReview16aCheckPinsFromLoopbackRequest: CheckPins called while
// serving a request on a loopback listener (an operator's "check the pins
// now" endpoint), with that request's context, lists as from anywhere
// else. The in-process requests came to no address, but carried the
// listener's local address in their context under the made-up host
// CheckPins names, and the DNS rebinding guard refused them (403).
func TestReview16aCheckPinsFromLoopbackRequest(t *testing.T) {
	var runs atomic.Int64
	srv, _ := pinnedServer(&runs)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	admin := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		n, err := g.CheckPins(ctx, &policy.Principal{Subject: "pin-check", Roles: []string{"admin"}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, strconv.Itoa(n))
	}))
	resp, err := http.Get(admin.URL + "/check-pins")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "2" {
		t.Errorf("CheckPins from a loopback request's handler: %d %s; want 2 tools", resp.StatusCode, body)
	}
}

// pagedServer is a downstream answering initialize and tools/list, each
// page from page (given the cursor asked for, "" for the first), and 202
// to notifications. It counts the tools/list requests.
func pagedServer(t *testing.T, lists *atomic.Int64, page func(cursor string) string) *httptest.Server {
	t.Helper()
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(b, &m) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"paged","version":"1"}}}`)
		case "tools/list":
			lists.Add(1)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+page(m.Params.Cursor)+`}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}))
}

// TestReview16aCheckPinsPagesBounded: a downstream whose listing never
// ends (a cursor it hands out again, or a new cursor on every page) made
// CheckPins ask for pages as fast as it answered until ctx ended (forever
// under a context without a deadline), every page logged; it now stops at
// a cursor already seen, and after maxCheckPages pages, with an error
// saying so.
func TestReview16aCheckPinsPagesBounded(t *testing.T) {
	tool := `{"name":"a","inputSchema":{"type":"object"}}`
	for _, tc := range []struct {
		name      string
		page      func(cursor string) string
		maxLists  int64
		wantInErr string
	}{
		{"same_cursor", func(string) string { return `{"tools":[` + tool + `],"nextCursor":"again"}` }, 2, "cursor"},
		{"cursor_cycle", func(c string) string {
			next := map[string]string{"": "x", "x": "y", "y": "x"}[c]
			return `{"tools":[` + tool + `],"nextCursor":"` + next + `"}`
		}, 3, "cursor"},
		{"new_cursor_every_page", func(c string) string {
			return `{"tools":[],"nextCursor":"` + c + `n"}`
		}, maxCheckPages, "pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var lists atomic.Int64
			down := pagedServer(t, &lists, tc.page)
			g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			n, err := g.CheckPins(ctx, &policy.Principal{Subject: "pin-check"})
			if err == nil || !strings.Contains(err.Error(), tc.wantInErr) || ctx.Err() != nil {
				t.Errorf("CheckPins = %d, %v (context: %v); want an error naming the %s, before the context ends", n, err, ctx.Err(), tc.wantInErr)
			}
			if k := lists.Load(); k > tc.maxLists {
				t.Errorf("%d pages asked for, want at most %d", k, tc.maxLists)
			}
		})
	}
}

// TestReview16aCheckPinsCountsTools: CheckPins returns how many tools the
// listing kept, each counted once: a downstream that lists a tool on two
// pages has one tool, not two.
func TestReview16aCheckPinsCountsTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tool := func(name string) string { return `{"name":"` + name + `","inputSchema":{"type":"object"}}` }
	var lists atomic.Int64
	down := pagedServer(t, &lists, func(c string) string {
		if c == "" {
			return `{"tools":[` + tool("a") + `,` + tool("b") + `],"nextCursor":"2"}`
		}
		return `{"tools":[` + tool("a") + `]}`
	})
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := g.CheckPins(ctx, &policy.Principal{Subject: "pin-check"}); err != nil || n != 2 {
		t.Errorf("CheckPins = %d, %v; want 2 tools (a, b)", n, err)
	}
}
