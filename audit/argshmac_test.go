package audit_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestArgsHMAC checks the keyed hash of arguments: the HMAC-SHA256 under
// the key of the same canonical form ArgsSHA256 hashes (so key order and
// whitespace do not change it), never equal to the plain hash, different
// under another key, "" where ArgsSHA256 gives "", and the plain hash for
// an empty key.
func TestArgsHMAC(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(`{"a":2,"b":"x"}`))
	want := hex.EncodeToString(mac.Sum(nil))
	for _, raw := range []string{`{"a":2,"b":"x"}`, `{ "b" : "x", "a" : 2 }`} {
		if got := audit.ArgsHMAC(key, json.RawMessage(raw)); got != want {
			t.Errorf("ArgsHMAC(%s) = %s, want %s", raw, got, want)
		}
	}
	raw := json.RawMessage(`{"userId":"u-1002"}`)
	if audit.ArgsHMAC(key, raw) == audit.ArgsSHA256(raw) {
		t.Error("the keyed hash equals the plain one")
	}
	if audit.ArgsHMAC(key, raw) == audit.ArgsHMAC([]byte("another key of sixteen+ bytes"), raw) {
		t.Error("two keys give the same hash")
	}
	for _, raw := range []string{"", "null"} {
		if got := audit.ArgsHMAC(key, json.RawMessage(raw)); got != "" {
			t.Errorf("ArgsHMAC(%q) = %q, want empty", raw, got)
		}
	}
	if got := audit.ArgsHMAC(nil, raw); got != audit.ArgsSHA256(raw) {
		t.Errorf("empty key: %s, want the plain hash %s", got, audit.ArgsSHA256(raw))
	}
	if got, want := string(audit.AppendArgsHMAC([]byte("x:"), key, raw)), "x:"+audit.ArgsHMAC(key, raw); got != want {
		t.Errorf("AppendArgsHMAC = %s, want %s", got, want)
	}
}
