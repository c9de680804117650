package mcpguard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool name of up to maxRecordedName bytes that policy.CheckName takes
// is a record's tool and a log line's as it is; one a byte longer, or one
// CheckName refuses, is the client's alone: the record has no tool, and
// its detail, as the log line, shows it quoted and cut at maxShownName
// bytes, before the detail the record had, if any.
func TestReview42aRecordedToolName(t *testing.T) {
	atMost := strings.Repeat("a", maxRecordedName)
	over := atMost + "a"
	shown := `"` + strings.Repeat("a", maxShownName) + `"...`
	type names struct{ Tool, Detail, Log string }
	cases := []struct {
		name, tool, detail string
		want               names
	}{
		{"plain", "look", "handler error", names{"look", "handler error", "look"}},
		{"longest_recorded", atMost, "", names{atMost, "", atMost}},
		{"one_byte_over", over, "", names{"", "tool name " + shown, shown}},
		{"one_byte_over_with_detail", over, "handler error", names{"", "tool name " + shown + "; handler error", shown}},
		{"bidi_override", "evil\u202egnp", "", names{"", `tool name "evil\u202egnp"`, `"evil\u202egnp"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool, detail := recordedTool(tc.tool, tc.detail)
			if diff := cmp.Diff(tc.want, names{tool, detail, logName(tc.tool)}); diff != "" {
				t.Errorf("recordedTool, logName of %.40q (-want +got):\n%s", tc.tool, diff)
			}
		})
	}
}

// review42aTextPanics is a panic value whose text panics with itself,
// which fmt does not recover from.
type review42aTextPanics struct{}

func (review42aTextPanics) String() string { panic(review42aTextPanics{}) }

// A handler's error or panic text is logged as it is when it is plain and
// at most maxLoggedText bytes; one a byte longer, or one with a control or
// invisible character, is quoted and cut. A panic value whose text panics
// is named by its type.
func TestReview42aLogText(t *testing.T) {
	atMost := strings.Repeat("e", maxLoggedText)
	over := atMost + "e"
	cases := []struct {
		name string
		r    any
		want string
	}{
		{"plain", "db: no such row", "db: no such row"},
		{"longest_as_is", atMost, atMost},
		{"one_byte_over", over, `"` + atMost + `"...`},
		{"line_break", "a\nb", `"a\nb"`},
		{"error_value", errors.New("boom"), "boom"},
		{"text_panics", review42aTextPanics{}, "a mcpguard.review42aTextPanics whose text panics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if s, ok := tc.r.(string); ok {
				if got := logText(s); got != tc.want {
					t.Errorf("logText(%.40q) = %.60q, want %.60q", s, got, tc.want)
				}
			}
			if got := panicText(tc.r); got != tc.want {
				t.Errorf("panicText(%.40v) = %.60q, want %.60q", tc.name, got, tc.want)
			}
		})
	}
}

// review42aSessionOf returns the server side of a session whose client
// declared the capabilities caps (review41bSession's client declares the
// go-sdk's defaults, which a test of canElicit needs to choose).
func review42aSessionOf(t *testing.T, caps *mcp.ClientCapabilities) *mcp.ServerSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{Capabilities: caps}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return ss
}

// canElicit: the go-sdk sends a form elicitation to a client that
// declared elicitation for forms, or with no mode (forms, by default),
// and not to one that declared none, or URL mode only.
func TestReview42aCanElicit(t *testing.T) {
	form, url := &mcp.FormElicitationCapabilities{}, &mcp.URLElicitationCapabilities{}
	cases := []struct {
		name string
		e    *mcp.ElicitationCapabilities
		want bool
	}{
		{"none", nil, false},
		{"no_mode", &mcp.ElicitationCapabilities{}, true},
		{"form", &mcp.ElicitationCapabilities{Form: form}, true},
		{"url_only", &mcp.ElicitationCapabilities{URL: url}, false},
		{"form_and_url", &mcp.ElicitationCapabilities{Form: form, URL: url}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := review42aSessionOf(t, &mcp.ClientCapabilities{Elicitation: tc.e})
			if got := canElicit(ss); got != tc.want {
				t.Errorf("canElicit of a client declaring %+v = %v, want %v", tc.e, got, tc.want)
			}
		})
	}
}
