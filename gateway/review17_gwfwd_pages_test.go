package gateway

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview17FilteredPagedList lists a paging go-sdk server's tools
// through the gateway with FilterToolsList (with and without Pins), as a
// go-sdk client does, page by page: every page is filtered, its cursor
// kept, also on a page left empty (all its tools are admin_*), so the
// viewer sees every tool it may call and none it may not, and the admin
// every tool.
func TestReview17FilteredPagedList(t *testing.T) {
	names := []string{"a_read", "admin_one", "admin_two", "b_read", "admin_three", "c_read", "d_read"}
	modes := []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateless_json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{"stateful_sse", &mcp.StreamableHTTPOptions{}},
	}
	for _, mode := range modes {
		for _, pins := range []bool{false, true} {
			name := mode.name
			if pins {
				name += "_pins"
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				// PageSize 2 over names sorted by the server: admin_three and
				// admin_two make a page of their own.
				srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
				for _, n := range names {
					mcp.AddTool(srv, &mcp.Tool{Name: n}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return nil, nil, nil
					})
				}
				down := newServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, mode.opts))
				o := &Options{FilterToolsList: true, Logger: discardLogger()}
				if pins {
					o.Pins = TrustOnFirstUse()
				}
				g, err := New(down.URL, DemoTokens(), o)
				if err != nil {
					t.Fatal(err)
				}
				gw := newServer(t, g)
				for _, who := range []struct {
					token string
					want  []string
				}{
					{"viewer-token", []string{"a_read", "b_read", "c_read", "d_read"}},
					{"admin-token", []string{"a_read", "admin_one", "admin_three", "admin_two", "b_read", "c_read", "d_read"}},
				} {
					cs := connect(t, ctx, gw.URL+"/mcp", who.token)
					var got []string
					pages := 0
					params := &mcp.ListToolsParams{}
					for {
						res, err := cs.ListTools(ctx, params)
						if err != nil {
							t.Fatalf("%s: page %d: %v", who.token, pages+1, err)
						}
						pages++
						for _, tl := range res.Tools {
							got = append(got, tl.Name)
						}
						if res.NextCursor == "" {
							break
						}
						params.Cursor = res.NextCursor
					}
					slices.Sort(got)
					if diff := cmp.Diff(who.want, got); diff != "" {
						t.Errorf("%s: tools over %d pages (-want +got):\n%s", who.token, pages, diff)
					}
					if pages != 4 {
						t.Errorf("%s: %d pages, want 4 (7 tools, 2 a page)", who.token, pages)
					}
				}
			})
		}
	}
}
