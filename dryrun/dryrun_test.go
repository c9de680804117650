package dryrun

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestContext(t *testing.T) {
	ctx := context.Background()
	if FromContext(ctx) {
		t.Errorf("FromContext(Background) = true, want false")
	}
	if !FromContext(NewContext(ctx)) {
		t.Errorf("FromContext(NewContext(ctx)) = false, want true")
	}
	type other struct{}
	child := context.WithValue(NewContext(ctx), other{}, 1)
	if !FromContext(child) {
		t.Errorf("FromContext(child of marked ctx) = false, want true")
	}
}

func TestRequested(t *testing.T) {
	tests := []struct {
		name string
		meta mcp.Meta
		want bool
	}{
		{"nil_meta", nil, false},
		{"missing_key", mcp.Meta{"other": true}, false},
		{"json_true", mcp.Meta{MetaKey: true}, true},
		{"json_false", mcp.Meta{MetaKey: false}, false},
		// Unclear requests fail closed: a preview (review13_dryrun_test.go).
		{"null", mcp.Meta{MetaKey: nil}, true},
		{"string_true", mcp.Meta{MetaKey: "true"}, true},
		{"number_one", mcp.Meta{MetaKey: float64(1)}, true},
		{"object", mcp.Meta{MetaKey: map[string]any{"on": true}}, true},
		{"case_variant_key", mcp.Meta{"io.mcpguard/dryrun": true}, true},
		{"similar_key", mcp.Meta{"io.mcpguard/dry-run": true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Requested(tt.meta); got != tt.want {
				t.Errorf("Requested(%v) = %v, want %v", tt.meta, got, tt.want)
			}
		})
	}
}

// TestRequestedFromWire decodes real tools/call params, as the SDK does,
// and checks that a client can never turn a server-configured dry-run off:
// whatever it sends, configured || Requested(meta) stays true.
func TestRequestedFromWire(t *testing.T) {
	tests := []struct {
		name string
		json string
		want bool
	}{
		{"preview_requested", `{"name":"w","_meta":{"io.mcpguard/dryRun":true}}`, true},
		{"explicit_false", `{"name":"w","_meta":{"io.mcpguard/dryRun":false}}`, false},
		{"string_false", `{"name":"w","_meta":{"io.mcpguard/dryRun":"false"}}`, true},
		{"no_meta", `{"name":"w"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p mcp.CallToolParamsRaw
			if err := json.Unmarshal([]byte(tt.json), &p); err != nil {
				t.Fatal(err)
			}
			if got := Requested(p.Meta); got != tt.want {
				t.Errorf("Requested(%s) = %v, want %v", tt.json, got, tt.want)
			}
			for _, configured := range []bool{true, false} {
				got := configured || Requested(p.Meta)
				if configured && !got {
					t.Errorf("configured dry-run turned off by %s", tt.json)
				}
			}
		})
	}
}

var idRE = regexp.MustCompile(`^DRYRUN-[0-9a-f]{16}$`)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !idRE.MatchString(id) {
			t.Fatalf("NewID() = %q, want match %s", id, idRE)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestResult(t *testing.T) {
	res := Result("create_ticket", "Would run create_ticket with arguments: body, title")
	if res.IsError {
		t.Errorf("Result(...).IsError = true, want false")
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("StructuredContent is %T, want map[string]any", res.StructuredContent)
	}
	id, _ := sc["id"].(string)
	if !idRE.MatchString(id) {
		t.Errorf("id = %q, want match %s", id, idRE)
	}
	want := map[string]any{
		"dry_run": true,
		"id":      id,
		"tool":    "create_ticket",
		"summary": "Would run create_ticket with arguments: body, title",
	}
	if diff := cmp.Diff(want, sc); diff != "" {
		t.Errorf("structured content mismatch (-want +got):\n%s", diff)
	}
	if len(res.Content) != 1 {
		t.Fatalf("len(Content) = %d, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("Content[0] is %T, want *mcp.TextContent", res.Content[0])
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		t.Fatalf("text content is not JSON: %v", err)
	}
	if diff := cmp.Diff(want, fromText); diff != "" {
		t.Errorf("text content mismatch (-want +got):\n%s", diff)
	}
	if other := Result("create_ticket", "x"); other.StructuredContent.(map[string]any)["id"] == id {
		t.Errorf("two results share id %q", id)
	}
}

func TestSummary(t *testing.T) {
	many := map[string]int{}
	for _, c := range "abcdefghijklmnopqrst" {
		many[string(c)] = 1
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name string
		tool string
		args string
		want string
	}{
		{"sorted_names_no_values", "refund", `{"customer_id":"CUST-1","amount":12.5,"api_key":"sk-secret"}`,
			"Would run refund with arguments: amount, api_key, customer_id"},
		{"empty_args", "ping", ``, "Would run ping with no arguments"},
		{"null_args", "ping", `null`, "Would run ping with no arguments"},
		{"empty_object", "ping", `{}`, "Would run ping with no arguments"},
		{"array_args", "ping", `[1,2]`, "Would run ping with arguments"},
		{"invalid_json", "ping", `{"a":`, "Would run ping with arguments"},
		{"control_chars_escaped", "to\x1bol", `{"a\u202eb\nc":1}`, `Would run tool with arguments: "a\u202eb\nc"`},
		{"long_name_truncated", "t", `{"` + strings.Repeat("n", 70) + `":1}`,
			"Would run t with arguments: " + strings.Repeat("n", 64) + "…"},
		{"many_names_capped", "t", string(manyJSON),
			"Would run t with arguments: a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, … (4 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summary(tt.tool, json.RawMessage(tt.args))
			if got != tt.want {
				t.Errorf("Summary(%q, %s) = %q, want %q", tt.tool, tt.args, got, tt.want)
			}
			if strings.Contains(got, "sk-secret") || strings.Contains(got, "CUST-1") {
				t.Errorf("Summary leaked a value: %q", got)
			}
		})
	}
}
