package audit_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestJSONLFlushSyncAfterClose checks that Flush and Sync of a closed JSONL
// sink return ErrClosed, as SQLSink.Flush does. Sync fsynced the closed
// file and returned "file already closed" wrapped as a write failure (and
// made it the sink's sticky error), or nil once an event had been written,
// which reads as "synced just now".
func TestJSONLFlushSyncAfterClose(t *testing.T) {
	for _, written := range []bool{false, true} {
		s, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if written {
			if err := s.Write(context.Background(), event("e", 1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); !errors.Is(err, audit.ErrClosed) {
			t.Errorf("written=%v: Sync after Close = %v, want ErrClosed", written, err)
		}
		if err := s.Flush(); !errors.Is(err, audit.ErrClosed) {
			t.Errorf("written=%v: Flush after Close = %v, want ErrClosed", written, err)
		}
		if err := s.Write(context.Background(), event("late", 2)); !errors.Is(err, audit.ErrClosed) {
			t.Errorf("written=%v: Write after Close = %v, want ErrClosed", written, err)
		}
	}
}

// TestJSONLWritersRacingClose: writers racing Close either get ErrClosed
// (and their event is not in the file) or nil (and it is): never another
// error, never an acknowledged event missing.
func TestJSONLWritersRacingClose(t *testing.T) {
	for _, durable := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "a.jsonl")
		s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, BufferSize: 512})
		if err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 200
		acked := make(chan string, writers*each)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					e := event(fmt.Sprintf("w%d-%d", w, i), i)
					var err error
					switch i % 3 {
					case 0:
						err = s.Write(context.Background(), e)
					case 1:
						err = s.WriteDurable(context.Background(), e)
					default:
						err = s.Keep(context.Background(), e, []byte(`{"a":1}`))
					}
					switch {
					case err == nil:
						acked <- fmt.Sprintf("w%d-%d", w, i)
					case !errors.Is(err, audit.ErrClosed):
						t.Errorf("durable=%v: write racing Close: %v", durable, err)
						return
					}
				}
			})
		}
		time.Sleep(2 * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		wg.Wait()
		close(acked)
		evs, lineErrs := readAll(t, path)
		if len(lineErrs) > 0 {
			t.Errorf("line errors: %v", lineErrs)
		}
		in := map[string]bool{}
		for _, e := range evs {
			in[e.CorrelationID] = true
		}
		n := 0
		for id := range acked {
			n++
			if !in[id] {
				t.Errorf("durable=%v: acknowledged event %s not in the file", durable, id)
			}
		}
		if n != len(evs) {
			t.Errorf("durable=%v: %d events acknowledged, %d in the file", durable, n, len(evs))
		}
	}
}
