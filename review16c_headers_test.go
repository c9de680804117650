package mcpguard_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview16cParamHeadersBesideCaseVariantKeys: go-sdk v1.8.0 reads a
// schema's x-mcp-header annotations with a decoder that matches keys
// exactly, while encoding/json matches "Properties", "PROPERTIES" and
// "propertie\u017f" (a long s) to a field tagged "properties" too. A schema
// that has such a key beside "properties", with a value that is not an
// object (an unknown keyword to a JSON Schema validator), made the guard's
// own reading fail, and the guard took the schema for one without
// annotations: a hidden tool was installed, and the go-sdk's header check
// told it from an unknown one. Such a tool is refused like any other
// hidden tool that binds headers; a tool every caller may see is not.
func TestReview16cParamHeadersBesideCaseVariantKeys(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"upper_case", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"Properties":0}`},
		{"long_s", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"propertie\u017f":"x"}`},
		{"nested", `{"type":"object","properties":{"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}},"PROPERTIES":[1]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := json.RawMessage(tc.schema)
			newGuard := func(show bool) *mcpguard.Guard {
				pol, err := policy.New(paramHeaderPolicy(show))
				if err != nil {
					t.Fatal(err)
				}
				g, err := mcpguard.New(pol, r16Tokens(), &mcpguard.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := newGuard(false)
			if _, err := g.Wrap(regionTool("admin_lookup", schema)); err == nil || !strings.Contains(err.Error(), "x-mcp-header") {
				t.Errorf("Wrap of a hidden tool with x-mcp-header: %v, want an error naming x-mcp-header", err)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			srv.AddTool(regionTool("admin_lookup", schema))
			if err := g.Install(srv); err == nil {
				hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
				defer hs.Close()
				c := &rawClient{t: t, url: hs.URL, version: r16New, token: "bob-token"}
				args := map[string]any{"region": "eu", "where": map[string]any{"zone": "a"}}
				hidden := c.postID(1, "tools/call", map[string]any{"name": "admin_lookup", "arguments": args}, nil)
				unknown := c.postID(1, "tools/call", map[string]any{"name": "admin_nothere", "arguments": args}, nil)
				t.Errorf("Install accepted the hidden admin_lookup; bob tells it from an unknown tool:\nhidden:  %s\nunknown: %s", hidden, unknown)
			} else if !strings.Contains(err.Error(), "x-mcp-header") {
				t.Errorf("Install: %v, want an error naming x-mcp-header", err)
			}
			// The same schema on a tool every caller may see is served.
			srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			srv.AddTool(regionTool("lookup", schema))
			if err := newGuard(false).Install(srv); err != nil {
				t.Errorf("Install of a tool every caller may see: %v", err)
			}
		})
	}
}
