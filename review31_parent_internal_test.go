package mcpguard

import (
	"testing"
	"unsafe"
)

// TestReview31CallSize: a call stays within the 888 bytes that serve.go's
// comment promises (a size class of 896 with the allocator's header), now
// that its outcome record (an audit.Event) has a parent id.
func TestReview31CallSize(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 888 {
		t.Errorf("call is %d bytes, want at most 888", n)
	}
}
