package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestReview57AuditKeyWrappedAsXxdWrapsIt: SHOP_MCP_CONFIRM_KEY skips the
// line breaks of hex wrapped as `xxd -p` wraps it (60 digits a line), but
// SHOP_MCP_AUDIT_KEY, generated the same way (xxd -p -l 32 /dev/urandom:
// 64 digits on two lines), was refused with "want at least 32 hex
// digits", which it holds twice over: the shop did not start. The audit
// key now skips line breaks too; what is not hex is still refused.
func TestReview57AuditKeyWrappedAsXxdWrapsIt(t *testing.T) {
	digits := strings.Repeat("0123456789abcdef", 4)
	for _, v := range []string{digits[:60] + "\n" + digits[60:] + "\n", digits[:60] + "\r\n" + digits[60:]} {
		k, err := parseAuditKey(v)
		if err != nil {
			t.Errorf("audit key %q: %v, want it read as hex", v, err)
			continue
		}
		if want, _ := parseAuditKey(digits); !bytes.Equal(k, want) {
			t.Errorf("audit key %q: %x, want %x", v, k, want)
		}
	}
	for _, bad := range []string{digits[:30] + "\n" + digits[30:31], digits[:60] + " " + digits[60:], "zz" + digits} {
		if _, err := parseAuditKey(bad); err == nil {
			t.Errorf("audit key %q accepted", bad)
		}
	}
}
