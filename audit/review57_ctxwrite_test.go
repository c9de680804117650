package audit_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview57JSONLDurableWriteHeedsCtx: a durable JSONL sink whose file
// stops taking writes (here a named pipe nobody reads, as a log shipper
// that stalled, or a disk whose fsync hangs) held the WriteDurable that
// was writing, whatever its context said: the guard's write-ahead bound
// (Options.WriteAheadTimeout) relies on the sink giving up when its
// context ends. It now returns ctx's error once ctx ends; the line is
// still written once the file takes it, once. A buffered sink's Write that
// filled the buffer, and so wrote it through, was held too: it returns nil
// (its event is buffered) once ctx ends.
func TestReview57JSONLDurableWriteHeedsCtx(t *testing.T) {
	for _, tc := range []struct {
		name    string
		durable bool // a durable sink, and Write; else a buffered one
		plain   bool // Write on the buffered sink: e is buffered, nil error
	}{
		{"DurableWrite", true, false},
		{"WriteDurable", false, false},
		{"BufferedWrite", false, true},
	} {
		durable := tc.durable
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.pipe")
			if err := mkfifo(path); err != nil {
				t.Fatal(err)
			}
			r, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, FlushInterval: -1, BufferSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			// More than the pipe holds (64 KiB on Linux): the write blocks
			// until somebody reads.
			big := diskEvent("big", 1<<20)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				if durable || tc.plain {
					done <- s.Write(ctx, big)
				} else {
					done <- s.WriteDurable(ctx, big)
				}
			}()
			select {
			case err := <-done:
				switch {
				case tc.plain && err != nil:
					// The event is buffered: an error would have the
					// caller write it again.
					t.Errorf("got %v, want nil", err)
				case !tc.plain && !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("got %v, want context.DeadlineExceeded", err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("returned after %v", d)
				}
			case <-time.After(3 * time.Second):
				t.Error("the write did not return 3 s after its context ended")
			}
			// Read the pipe: the line arrives, once, and Close returns.
			lines := make(chan int, 4)
			go func() {
				sc := bufio.NewScanner(r)
				sc.Buffer(nil, 4<<20)
				for sc.Scan() {
					lines <- len(sc.Bytes())
				}
			}()
			select {
			case n := <-lines:
				if n < 1<<20 {
					t.Errorf("line of %d bytes", n)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the line never arrived")
			}
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close hangs")
			}
			select {
			case n := <-lines:
				t.Errorf("a second line of %d bytes", n)
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}
