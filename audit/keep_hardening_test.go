package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestKeepReportsFullBufferWriteError checks that Keep returns the failed
// write Write returns: on a sink with BufferSize 1 (every Write writes the
// buffer through) on a file whose writes fail (/dev/full: ENOSPC), Write
// returns the error for its event, and so must Keep for the first kept
// event, instead of acknowledging events that are then lost.
func TestKeepReportsFullBufferWriteError(t *testing.T) {
	ctx := context.Background()
	open := func() *audit.JSONLSink {
		s, err := audit.OpenJSONL("/dev/full", &audit.JSONLOptions{BufferSize: 1, FlushInterval: -1})
		if err != nil {
			t.Fatalf("cannot open /dev/full: %v", err)
		}
		return s
	}
	w := open()
	defer w.Close()
	werr := w.Write(ctx, event("w0", 0))
	if werr == nil {
		t.Fatal("writes to /dev/full do not fail here")
	}
	t.Logf("Write: %v", werr)

	k := open()
	defer k.Close()
	accepted := 0
	var kerr error
	for i := range 600 {
		e := event(fmt.Sprintf("k%03d", i), i)
		if kerr = k.Keep(ctx, e, nil); kerr != nil {
			break
		}
		accepted++
	}
	if accepted > 0 {
		t.Errorf("Keep acknowledged %d events (then %v) on a sink where Write refuses the first one with %v; the acknowledged events are lost",
			accepted, kerr, werr)
	}
}
