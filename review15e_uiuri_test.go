package mcpguard_test

import (
	"context"
	"encoding/json"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// looseName is how another plausible template handler finds the page a
// URI names: it decodes percent-escapes until none are left (a common
// "canonicalise before comparing" step), reads the host as net/url does
// (userinfo and port dropped, as Hostname drops them; a trailing dot, as
// DNS reads it) and cleans the path.
func looseName(uri string) string {
	s := uri
	for {
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			break
		}
		s = d
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.Hostname(), ".") + path.Clean("/"+u.Path)
}

// newLooseServer serves pages through the template ui://{+rest}, whose
// handler takes a URI for a page when looseName gives it under Unicode
// case folding (strings.EqualFold). withAdmin adds admin_tpl and its page.
func newLooseServer(withAdmin bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	addTools(srv, &spy{})
	pages := map[string]string{"tpl/open": "open page"}
	srv.AddTool(uiTool("open_app", nested("ui://tpl/open")), okTool)
	if withAdmin {
		pages["tpl/settings"] = "ADMIN PAGE"
		srv.AddTool(uiTool("admin_tpl", nested("ui://tpl/settings")), okTool)
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "ui://{+rest}", Name: "pages"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			name := looseName(req.Params.URI)
			for p, text := range pages {
				if strings.EqualFold(name, p) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
				}
			}
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		})
	return srv
}

// TestReview15eHiddenUIResourceLooseSpellings: a handler that decodes
// escapes until none are left, reads the host as net/url does and folds
// case as strings.EqualFold does serves the UI resource of a tool bob may
// not see under spellings the guard took for other resources: nine rounds
// of escaping, a long s (U+017F) for an s, userinfo, a port, a trailing
// dot. Each must be answered to bob as by a server without the tool;
// alice is served each (so the handler does serve them).
func TestReview15eHiddenUIResourceLooseSpellings(t *testing.T) {
	h := (&uiServer{srv: newLooseServer(true)}).guard(t)
	guarded, aliceRaw := h.rawConnect(bob), h.rawConnect(alice)
	bare := rawConnectTo(t, newLooseServer(false), nil)
	spellings := []string{
		"ui://tpl/%" + strings.Repeat("25", 8) + "73ettings",
		"ui://tpl/%C5%BFettings",
		"ui://tpl/SETTING%C5%BF",
		"ui://x@tpl/settings",
		"ui://tpl:8080/settings",
		"ui://tpl:/settings",
		"ui://tpl./settings",
		"ui://u:p@TPL.:1/settings",
	}
	for _, uri := range spellings {
		q, _ := json.Marshal(uri)
		read := `{"uri":` + string(q) + `}`
		if got := aliceRaw.response("resources/read", read); !strings.Contains(got, "ADMIN PAGE") {
			t.Fatalf("the handler does not serve alice %s: %s (the test's premise)", uri, got)
		}
		if got, want := guarded.response("resources/read", read), bare.response("resources/read", read); got != want {
			t.Errorf("bob's resources/read %s:\n got %s\nwant %s", uri, got, want)
		}
	}
	for _, uri := range []string{"ui://tpl/open", "ui://x@tpl/OPEN", "ui://tpl:1/%256Fpen"} {
		q, _ := json.Marshal(uri)
		if got := guarded.response("resources/read", `{"uri":`+string(q)+`}`); !strings.Contains(got, "open page") {
			t.Errorf("bob reading %s: %s", uri, got)
		}
	}
}
