package mcpguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/token"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview61FromEnvEmpty: a variable set to "" (a client configuration
// whose env entry was left blank) was refused as "not set", which sends
// the user looking for a missing entry; the refusal says it is empty.
func TestReview61FromEnvEmpty(t *testing.T) {
	tab, err := token.Parse([]byte(`{"tok-a":"support"}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("REVIEW61_EMPTY", "")
	_, err = mcpguard.FromEnv("REVIEW61_EMPTY", tab).Authenticate(context.Background(), &mcp.CallToolRequest{})
	if err == nil || !strings.Contains(err.Error(), "environment variable REVIEW61_EMPTY is empty") {
		t.Fatalf("FromEnv of an empty variable: %v, want a refusal saying it is empty", err)
	}
}
