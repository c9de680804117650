package mcpguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLate14DisplayArgsKeyCollisions: keys that read the same once
// escaped keep one value, always the same one whatever the order a map is
// ranged in: the key as sent that needed no escape, else the least key.
func TestLate14DisplayArgsKeyCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"literal_wins", map[string]any{`a\nb`: "literal", "a\nb": "escaped"}, map[string]any{`a\nb`: "literal"}},
		{"least_escaped_wins", map[string]any{"\\n\n": "first", "\n\\n": "second"}, map[string]any{`\n\n`: "second"}},
		{"no_collision", map[string]any{"a\tb": []any{"c\rd", 1.5}, "e": nil}, map[string]any{`a\tb`: []any{`c\rd`, 1.5}, "e": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 { // map order varies from run to run
				if diff := cmp.Diff(tc.want, displayArgs(tc.in)); diff != "" {
					t.Fatalf("displayArgs(%q) (-want +got):\n%s", tc.in, diff)
				}
			}
		})
	}
	if displayArgs(nil) != nil {
		t.Errorf("displayArgs(nil) is not nil")
	}
}
