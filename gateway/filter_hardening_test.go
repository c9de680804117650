package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkFilterGateway returns the URL of a gateway filtering tools/list in front
// of a real go-sdk Streamable HTTP server (sdkServer: get_customer_record and
// admin_reset_key, which the viewer may neither call nor see).
func sdkFilterGateway(t *testing.T, opts *mcp.StreamableHTTPOptions) string {
	t.Helper()
	var resets atomic.Int64
	srv := sdkServer(&resets)
	down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
	g, err := New(down.URL, DemoTokens(), &Options{FilterToolsList: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, g).URL
}

// sdkSession opens a session through the gateway as the raw caller would
// (initialize, then notifications/initialized) and returns its id.
func sdkSession(t *testing.T, rg *rig, auth string) string {
	t.Helper()
	got := rg.post(t, auth, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := got.header.Get("Mcp-Session-Id")
	if got.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", got.status, sid, got.body)
	}
	rg.post(t, auth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	return sid
}

// TestFilterNormalizedID: the go-sdk server turns a numeric id into
// int64(float64(id)), so a tools/list with id 1.5 is answered with id 1; a
// raw caller reads the answer whatever its id, so the filter must not
// depend on the id matching.
func TestFilterNormalizedID(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateless_json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{"stateful_sse", &mcp.StreamableHTTPOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := &rig{url: sdkFilterGateway(t, tc.opts)}
			var hdr []string
			if !tc.opts.Stateless {
				hdr = []string{"Mcp-Session-Id", sdkSession(t, rg, viewer), "Mcp-Protocol-Version", "2025-06-18"}
			}
			for _, id := range []string{`1`, `1.5`, `18446744073709551616`} {
				got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`, hdr...)
				if !strings.Contains(got.body, "get_customer_record") {
					t.Fatalf("id %s: no tools/list answer: %d %s", id, got.status, got.body)
				}
				if strings.Contains(got.body, "admin_reset_key") {
					t.Errorf("id %s: the viewer's filtered tools/list shows the hidden tool admin_reset_key: %s", id, got.body)
				}
			}
		})
	}
}

// TestFilterNormalizedIDInBatch: the same through a batch (collect and
// batchSSE).
func TestFilterNormalizedIDInBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateless_json_collect", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{"stateful_sse_batchSSE", &mcp.StreamableHTTPOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := &rig{url: sdkFilterGateway(t, tc.opts)}
			var hdr []string
			if !tc.opts.Stateless {
				hdr = []string{"Mcp-Session-Id", sdkSession(t, rg, viewer), "Mcp-Protocol-Version", "2025-06-18"}
			}
			got := rg.post(t, viewer, `[{"jsonrpc":"2.0","id":7.5,"method":"tools/list"},{"jsonrpc":"2.0","id":8,"method":"ping"}]`, hdr...)
			if !strings.Contains(got.body, "get_customer_record") {
				t.Fatalf("no tools/list answer: %d %s", got.status, got.body)
			}
			if strings.Contains(got.body, "admin_reset_key") {
				t.Errorf("the viewer's batched tools/list shows the hidden tool admin_reset_key: %s", got.body)
			}
		})
	}
}

// TestFilterMethodCase: a method that differs from tools/list only in case
// is filtered too, since a lenient downstream answers it with the list (as
// a tools/call variant is refused for the same reason).
func TestFilterMethodCase(t *testing.T) {
	const list = `{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}`
	url := filterGatewayFor(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(strings.ToLower(string(b)), `"tools/list"`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":`+list+`}`)
			return
		}
		http.Error(w, "no", http.StatusBadRequest)
	})
	got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"Tools/List"}`)
	if strings.Contains(got.body, "admin_reset_key") {
		t.Errorf("method \"Tools/List\": the hidden tool reaches the viewer unfiltered (%d): %s", got.status, got.body)
	}
}
