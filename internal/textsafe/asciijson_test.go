package textsafe

import (
	"encoding/json"
	"testing"
)

// TestASCIIJSON: every character outside printable ASCII is escaped, and
// the text reads back as the same value.
func TestASCIIJSON(t *testing.T) {
	for _, s := range []string{"plain", "é", "\u200badmin", "\u202e", "😀", "\u007f", "a\"b\\c", "\u2028"} {
		js, _ := json.Marshal(map[string]string{"k": s})
		out := ASCIIJSON(string(js))
		for i := 0; i < len(out); i++ {
			if out[i] < 0x20 || out[i] >= 0x7f {
				t.Fatalf("ASCIIJSON(%q) = %q: byte %#x", js, out, out[i])
			}
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(out), &back); err != nil || back["k"] != s {
			t.Errorf("ASCIIJSON(%q) = %q reads back as %q, %v", js, out, back["k"], err)
		}
	}
}
