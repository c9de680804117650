package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review43aProbes are a request of each resource method the guard answers,
// about uri; with legacy, of protocol 2025-11-25's resources/subscribe and
// resources/unsubscribe too (2026-07-28 has subscriptions/listen instead).
func review43aProbes(uri string, legacy bool) [][2]string {
	q, _ := json.Marshal(uri)
	out := [][2]string{
		{"resources/read", `{"uri":` + string(q) + `}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":` + string(q) + `},"argument":{"name":"name","value":""}}`},
		{"resources/list", `{"cursor":""}`},
	}
	if legacy {
		out = append(out,
			[2]string{"resources/subscribe", `{"uri":` + string(q) + `}`},
			[2]string{"resources/unsubscribe", `{"uri":` + string(q) + `}`})
	}
	return out
}

// review43aError returns the guard's code (in the error's data) and the
// message of the error of resp, a JSON-RPC response as sent, failing t if
// resp is not an error.
func review43aError(t *testing.T, what, resp string) (code, message string) {
	t.Helper()
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp), &m); err != nil {
		t.Fatalf("%s: %v in %s", what, err, resp)
	}
	if m.Error == nil || m.Result != nil {
		t.Errorf("%s answered %s, want an error and no result", what, resp)
		return "", ""
	}
	return m.Error.Data.Code, m.Error.Message
}

// TestReview43aUnauthenticatedResourceRequests: a caller the Authenticator
// refuses is refused every resource method (as unauthenticated), whatever
// resource it names: none is passed on, and none is answered with a result.
func TestReview43aUnauthenticatedResourceRequests(t *testing.T) {
	var passed atomic.Int64
	srv := review26Server(true, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "resources/") || method == "completion/complete" {
				passed.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	h := review26Guard(t, srv)
	r := rawConnectTo(t, h.srv, nil) // bound to no identity
	for _, uri := range []string{plainURI, uiAdmin, uiOpen} {
		for _, p := range review43aProbes(uri, true) {
			what := "an unauthenticated " + p[0] + " " + p[1]
			if code, _ := review43aError(t, what, r.response(p[0], p[1])); code != string(mcpguard.CodeUnauthenticated) {
				t.Errorf("%s: code %q, want %s", what, code, mcpguard.CodeUnauthenticated)
			}
		}
	}
	if n := passed.Load(); n != 0 {
		t.Errorf("%d unauthenticated requests were passed below the guard", n)
	}
}

// TestReview43aToolsListFailureFailsClosed: the guard lists the server's
// tools at each resource request to know which UI resources the caller may
// not see; when that listing fails, the request fails (with its error) and
// is not passed on, whatever resource it names: a hidden UI resource is not
// read, subscribed to nor completed for lack of the tools.
func TestReview43aToolsListFailureFailsClosed(t *testing.T) {
	var failing atomic.Bool
	var passed atomic.Int64
	srv := review26Server(true, nil)
	review43FailingToolsList(srv, &failing, func(method string) {
		if failing.Load() && (strings.HasPrefix(method, "resources/") || method == "completion/complete") {
			passed.Add(1)
		}
	})
	h := review26Guard(t, srv)
	for _, legacy := range []bool{false, true} {
		r := review26Connect(t, h, bob, legacy)
		failing.Store(true)
		for _, uri := range []string{uiAdmin, plainURI} {
			for _, p := range review43aProbes(uri, legacy) {
				what := "bob's " + p[0] + " " + p[1] + " while tools/list fails"
				if _, msg := review43aError(t, what, r.response(p[0], p[1])); !strings.Contains(msg, "tools/list is down") {
					t.Errorf("%s: message %q, want the listing's error", what, msg)
				}
			}
		}
		failing.Store(false)
		if n := passed.Swap(0); n != 0 {
			t.Errorf("legacy %v: %d requests were passed on while tools/list failed", legacy, n)
		}
	}
}
