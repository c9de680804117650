package hangup_test

import (
	"runtime"
	"testing"

	"github.com/mcpguard/mcpguard/internal/hangup"
)

// TestReview63hStoppedHandlesAreReleased: each Handle registered a channel
// of its own for SIGHUP with os/signal and, so that SIGHUP goes on being
// caught after stop, never unregistered it: the channel and its entry in
// os/signal's table stayed for the life of the process, one per Handle.
// The binaries call Handle (Reopen) in every start, the ticket server in
// newApp, whose failure after the audit file was opened closes what it
// opened but not that registration: a program that retries a failed start
// kept one more per try. 20,000 Handles and stops must leave nothing
// behind (a registration kept costs about 200 bytes: 4 MB for them all).
func TestReview63hStoppedHandlesAreReleased(t *testing.T) {
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	hangup.Handle(func() {})() // whatever the first Handle keeps
	const n = 20000
	before := heap()
	for range n {
		hangup.Handle(func() {})()
	}
	after := heap()
	if grew := int64(after) - int64(before); grew > 1<<20 {
		t.Errorf("the heap grew by %d bytes (%d a Handle) over %d Handles, each stopped: "+
			"each left its SIGHUP registration behind", grew, grew/n, n)
	}
}
