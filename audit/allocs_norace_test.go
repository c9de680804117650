//go:build !race

// Allocation counts are only meaningful without the race detector, so this
// file is not built with -race: nothing skips.

package audit_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestAppendArgsSHA256NoAlloc checks that the plain hash allocates nothing
// when dst has room for the canonical form: the guard hashes every call's
// arguments into memory of the call's own.
func TestAppendArgsSHA256NoAlloc(t *testing.T) {
	raw := json.RawMessage(`{"customer_id":"CUST-00001","amount":12.5,"reason":"damaged"}`)
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(200, func() { audit.AppendArgsSHA256(buf, raw) }); n != 0 {
		t.Errorf("AppendArgsSHA256 allocates %v times per call, want 0", n)
	}
}
