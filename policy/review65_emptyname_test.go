package policy_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview65CheckNameEmpty: CheckName says it refuses what New refuses as a
// name in its configuration, and New refuses an empty tool name, pattern,
// role and allowlist entry; CheckName("") returned nil.
func TestReview65CheckNameEmpty(t *testing.T) {
	if _, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "", Class: policy.Read}}}); err == nil {
		t.Fatal("New accepted a tool rule with an empty name")
	}
	if err := policy.CheckName(""); err == nil {
		t.Error(`CheckName("") = nil; New refuses the empty name`)
	}
	if err := policy.CheckName("get_weather"); err != nil {
		t.Errorf("CheckName(get_weather) = %v", err)
	}
}
