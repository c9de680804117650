package main

import (
	"strings"
	"testing"
)

// TestReview59dPolicyFoldedRulesNameTheFlag: the README says a mistake in
// the flags stops the start "with a message naming the flag and exit
// status 2", a --policy file whose rules are refused among them. A file
// with two rules whose names differ only in case ("refund" and "Refund")
// and whose demands differ, which gateway.New refuses, stopped the start
// with status 2 but a message that named neither --policy nor the file:
// "gateway: the policy's rules for tools ... differ".
func TestReview59dPolicyFoldedRulesNameTheFlag(t *testing.T) {
	path := writePolicy(t, `{"tools":[{"name":"refund","class":"read"},{"name":"Refund","class":"write"}],"write_allowlist":["Refund"]}`)
	_, err := runAtStart(t, nil, "--port", "0", "--policy", path)
	if err == nil {
		t.Fatal("the start went on")
	}
	if code := exitCode(err); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	if msg := err.Error(); !strings.Contains(msg, "--policy "+path) || !strings.Contains(msg, "differ only in case") {
		t.Errorf("error %q: want it to name --policy and the file, and why", msg)
	}
}

// TestReview59dAuditKeyOddDigits: the README asks MCP_GATEWAY_AUDIT_KEY for
// "at least 32 hex digits"; a key of 33 (a digit lost or added in a copy)
// was refused with "want at least 32 hex digits", which it has. The
// message must say what is wrong: an odd number of digits.
func TestReview59dAuditKeyOddDigits(t *testing.T) {
	key := strings.Repeat("0123456789abcdef", 2) + "a" // 33 hex digits
	_, err := runAtStart(t, map[string]*string{auditKeyEnv: &key}, "--port", "0", "--audit", t.TempDir()+"/a.jsonl")
	if err == nil || exitCode(err) != 2 {
		t.Fatalf("error %v, want a usage error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "even number") || strings.Contains(msg, key) {
		t.Errorf("error %q: want it to say the digits must be an even number, without quoting the key", msg)
	}
}
