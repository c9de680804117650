package mcpguard_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview43cDenialDepthBound: a refusal nested exactly 32 levels deep,
// the envelope's levels included, is read, from its text and from the map
// a client decodes it into; one level deeper, from neither.
func TestReview43cDenialDepthBound(t *testing.T) {
	for _, depth := range []int{32, 33} {
		// {"error":{...,"details":{"a":...{}}}}: the envelope, the error
		// object and details are 3 levels; the rest are nested in details.
		inner := strings.Repeat(`{"a":`, depth-3) + `{}` + strings.Repeat(`}`, depth-3)
		text := `{"error":{"code":"FORBIDDEN","message":"no","retryable":false,"details":` + inner + `}}`
		var sc map[string]any
		if err := json.Unmarshal([]byte(text), &sc); err != nil {
			t.Fatal(err)
		}
		want := depth <= 32
		_, fromText := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil)
		_, fromMap := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, StructuredContent: sc}, nil)
		if fromText != want || fromMap != want {
			t.Errorf("nested %d levels: read from the text %v, from the map %v; want %v", depth, fromText, fromMap, want)
		}
	}
}

// TestReview43cDenialTextSizeBound: a text refusal of exactly 64 KiB is
// read; one byte more is not.
func TestReview43cDenialTextSizeBound(t *testing.T) {
	for _, size := range []int{64 << 10, 64<<10 + 1} {
		head := `{"error":{"code":"FORBIDDEN","message":"no","retryable":false,"details":{"pad":"`
		tail := `"}}}`
		text := head + strings.Repeat("x", size-len(head)-len(tail)) + tail
		_, ok := mcpguard.DenialOf(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil)
		if want := size <= 64<<10; ok != want {
			t.Errorf("a text refusal of %d bytes: read %v, want %v", len(text), ok, want)
		}
	}
}
