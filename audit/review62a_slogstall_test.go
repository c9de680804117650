package audit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview62aSlogSinkHeedsCtx: the guard's write-ahead bound
// (mcpguard.Options.WriteAheadTimeout) and the gateway's (Options.Timeout)
// rely on the sink giving up when its context ends, "as the package
// audit's sinks do". A SlogSink whose handler writes to a pipe nobody
// reads (an audit trail on the standard error of a stdio server whose
// client does not drain it, a log shipper that stalled: the case
// TestReview57JSONLDurableWriteHeedsCtx fixed for the JSONL sink) held
// WriteDurable, and so the write, for as long as the pipe stayed full,
// whatever its context said.
func TestReview62aSlogSinkHeedsCtx(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// Let the blocked write go at the end: reading the pipe empties it.
	drained := make(chan struct{})
	t.Cleanup(func() {
		go func() {
			io.Copy(io.Discard, r) //nolint:errcheck // drains until w closes
			r.Close()
			close(drained)
		}()
		time.Sleep(20 * time.Millisecond)
		w.Close()
		<-drained
	})
	s := audit.NewSlogSink(slog.NewJSONHandler(w, nil), nil)
	// More than the pipe holds (64 KiB on Linux): the write blocks until
	// somebody reads.
	big := diskEvent("big", 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- audit.WriteDurable(ctx, s, big) }()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WriteDurable after its context ended: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("WriteDurable on a SlogSink whose handler's pipe is full did not return 1.8 s after its context ended: a write's intent is not bounded by WriteAheadTimeout")
	}
}
