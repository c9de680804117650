package gateway

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/corrid"
)

// TestReview49ResumedFrom checks how a GET's Last-Event-ID is read back to
// the downstream's event id: the gateway's own part (streamWaitPrefix and a
// correlation id) is taken off; any other id, one as long as the
// gateway's part or one that only begins like it, is the downstream's as
// it stands.
func TestReview49ResumedFrom(t *testing.T) {
	cid := strings.Repeat("c", corrid.Len)
	long := strings.Repeat("e", len(streamWaitPrefix)+corrid.Len+5)
	for _, tc := range []struct{ v, want string }{
		{"", ""},
		{"ev-7", "ev-7"},
		{long, long},
		{streamWaitPrefix + cid, ""},
		{streamWaitPrefix + cid + "ev-7", "ev-7"},
		{streamWaitPrefix + "short", streamWaitPrefix + "short"},
		{streamWaitPrefix, streamWaitPrefix},
	} {
		if got := resumedFrom(tc.v); got != tc.want {
			t.Errorf("resumedFrom(%q) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestReview49StreamCountNoCap checks streamCount's zero value, its cap 0:
// no cap, nothing counted.
func TestReview49StreamCountNoCap(t *testing.T) {
	var s streamCount
	for range 100 {
		if !s.acquire("a") {
			t.Fatal("a stream count without a cap refused a stream")
		}
	}
	s.release("a")
	if s.open != nil {
		t.Errorf("a stream count without a cap counted %v", s.open)
	}
}
