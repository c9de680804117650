package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/policy"
)

// TestRefusalsCutLongNamesAtCharacters: a refusal, the policy's or the
// pins', shows a long tool name cut to at most 128 bytes with "..." after
// it; the cut falls between characters, so that a non-ASCII name (which
// CheckName accepts) is not shown with a replacement character where its
// last one was split.
func TestRefusalsCutLongNamesAtCharacters(t *testing.T) {
	pol, err := policy.New(policy.Config{RoleRules: []policy.RoleRule{{Pattern: "*", Roles: []string{"nobody"}}}})
	if err != nil {
		t.Fatal(err)
	}
	pins, err := ParsePins([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("あ", 60) // 180 bytes: 128 falls inside the 43rd character
	for what, opts := range map[string]*Options{"policy": {Policy: pol}, "pins": {Pins: pins}} {
		rg := newRig(t, opts)
		got := rg.post(t, viewer, call(`1`, name, `{}`))
		_, _, data := rpcErr(t, got.body)
		shown, _ := data["tool"].(string)
		if strings.ContainsRune(shown, utf8.RuneError) || !strings.HasSuffix(shown, "...") ||
			!strings.HasPrefix(name, strings.TrimSuffix(shown, "...")) || len(shown) > 128+3 {
			t.Errorf("%s: status %d: tool shown as %q, want a prefix of the name cut between characters, then \"...\"", what, got.status, shown)
		}
	}
}
