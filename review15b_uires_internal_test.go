package mcpguard

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview15bUIResourcesShapes: the URIs a tool's _meta names as its UI
// resource, whatever shape the server gave the values: a value holding a
// URI in a shape hosts would not read (a string where an object belongs,
// an array) still names it, and hides it from those who may not see the
// tool; a value holding none names nothing, and no value panics.
func TestReview15bUIResourcesShapes(t *testing.T) {
	huge := "ui://admin/" + strings.Repeat("a", 1<<20)
	tests := []struct {
		name string
		meta mcp.Meta
		want []string
	}{
		{"nested", mcp.Meta{"ui": map[string]any{"resourceUri": "ui://a"}}, []string{"ui://a"}},
		{"flat", mcp.Meta{"ui/resourceUri": "ui://a"}, []string{"ui://a"}},
		{"openai", mcp.Meta{"openai/outputTemplate": "ui://w"}, []string{"ui://w"}},
		{"all_three_deduplicated", mcp.Meta{"ui/resourceUri": "ui://a", "openai/outputTemplate": "ui://a", "ui": map[string]any{"resourceUri": "ui://b"}}, []string{"ui://a", "ui://b"}},
		{"typed_struct", mcp.Meta{"ui": struct {
			ResourceURI string `json:"resourceUri"`
		}{"ui://s"}}, []string{"ui://s"}},
		{"ui_is_a_string", mcp.Meta{"ui": "ui://a"}, []string{"ui://a"}},
		{"ui_is_an_array", mcp.Meta{"ui": []any{"ui://a", map[string]any{"resourceUri": "ui://b"}}}, []string{"ui://a"}},
		{"resource_uri_array", mcp.Meta{"ui": map[string]any{"resourceUri": []string{"ui://a", "ui://b"}}}, []string{"ui://a", "ui://b"}},
		{"flat_array", mcp.Meta{"ui/resourceUri": []any{"ui://a", 7, nil, ""}}, []string{"ui://a"}},
		{"resource_uri_number", mcp.Meta{"ui": map[string]any{"resourceUri": 42}}, nil},
		{"resource_uri_object", mcp.Meta{"ui": map[string]any{"resourceUri": map[string]any{"uri": "ui://a"}}}, nil},
		{"ui_null", mcp.Meta{"ui": nil}, nil},
		{"empty_string", mcp.Meta{"ui": map[string]any{"resourceUri": ""}}, nil},
		{"unmarshalable", mcp.Meta{"ui": func() {}, "ui/resourceUri": make(chan int)}, nil},
		{"huge", mcp.Meta{"ui": map[string]any{"resourceUri": huge}}, []string{huge}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := uiResources(&mcp.Tool{Name: "t", Meta: tt.meta}); !slices.Equal(got, tt.want) {
				t.Errorf("uiResources(_meta %s) = %.200q, want %.200q", tt.name, got, tt.want)
			}
		})
	}
}

// TestReview15bURIKey: URIs that a lenient template handler may take for
// the same resource share a key; others do not.
func TestReview15bURIKey(t *testing.T) {
	same := []string{
		"ui://tpl/admin", "ui://tpl/%61dmin", "ui://tpl/%2561dmin", "UI://TPL/ADMIN", "ui://tpl/admin?v=2",
		"ui://tpl/admin#x", "ui://tpl/admin%3Fv=2", "ui://tpl/x/../admin", "ui://tpl//admin/",
		"ui://tpl/./admin", `ui://tpl\admin`, " ui://tpl/admin ", "ui:tpl/admin", "ui://tpl/admin%23",
	}
	want := uriKey(same[0])
	for _, u := range same {
		if got := uriKey(u); got != want {
			t.Errorf("uriKey(%q) = %q, want %q (as uriKey(%q))", u, got, want, same[0])
		}
	}
	for _, u := range []string{"ui://tpl/open", "ui://tpl/admin2", "ui://tpl/adm", "ui://admin/tpl", "file:///tpl/admin", "ui://tpl/%zzadmin", "ui://tpl/admin%"} {
		if got := uriKey(u); got == want {
			t.Errorf("uriKey(%q) = %q, the key of %q", u, got, same[0])
		}
	}
}

// TestReview15bSightHides: a URI that means a hidden UI resource is hidden,
// unless it is itself one the caller may see; listings are filtered alike.
func TestReview15bSightHides(t *testing.T) {
	s := &uiSight{
		seen:   map[string]bool{"ui://tpl/open": true, "ui://tpl/ADMIN": true},
		hidden: map[string]bool{"ui://tpl/admin": true},
		keys:   map[string]bool{uriKey("ui://tpl/admin"): true},
	}
	for uri, want := range map[string]bool{
		"ui://tpl/admin": true, "ui://tpl/Admin": true, "ui://tpl/%61dmin": true, "ui://tpl/admin?v=1": true,
		"ui://tpl/ADMIN": false, "ui://tpl/open": false, "ui://tpl/OPEN": false, "file:///x": false,
	} {
		if got := s.hides(uri); got != want {
			t.Errorf("hides(%q) = %v, want %v", uri, got, want)
		}
	}
	all := []*mcp.Resource{{URI: "ui://tpl/open"}, {URI: "ui://tpl/Admin"}, {URI: "ui://tpl/ADMIN"}, nil, {URI: "file:///x"}}
	var got []string
	for _, r := range visibleResources(s, all) {
		got = append(got, r.URI)
	}
	if diff := cmp.Diff([]string{"ui://tpl/open", "ui://tpl/ADMIN", "file:///x"}, got); diff != "" {
		t.Errorf("visibleResources (-want +got):\n%s", diff)
	}
}

// TestReview15bNamedUI: a resources/updated notification names a UI
// resource when its URI is, or means, one that a tool names.
func TestReview15bNamedUI(t *testing.T) {
	links := []*toolEntry{{tool: &mcp.Tool{Name: "a"}, ui: []string{"ui://tpl/admin"}}, {tool: &mcp.Tool{Name: "b"}}}
	for uri, want := range map[string]bool{
		"ui://tpl/admin": true, "ui://tpl/ADMIN": true, "ui://tpl/%61dmin?x": true,
		"ui://tpl/open": false, "file:///admin": false,
	} {
		if got := namedUI(links, uri); got != want {
			t.Errorf("namedUI(%q) = %v, want %v", uri, got, want)
		}
	}
	if namedUI(nil, "ui://tpl/admin") {
		t.Error("namedUI with no links = true")
	}
}
