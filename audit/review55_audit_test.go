package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReview55BufferBoundedWhileFileStalls: while a write to a buffered
// JSONLSink's file does not return (a hung NFS server, a named pipe nobody
// reads: here, the sink's I/O semaphore held), a Write or Keep whose ctx
// is done found the buffer full, could not flush it, and still returned
// nil with its line added to the buffer. Under a stall that outlasts the
// callers' contexts (a gateway's request contexts), the buffer grew without
// bound: 10,000 events made 1.38 MB of a 4 KiB buffer, all acknowledged,
// all lost if the process then died, where JSONLOptions promises that a
// crash loses "about BufferSize bytes at most". A caller that finds the
// buffer full must wait for the file, and when its ctx ends first be told
// that its event is not recorded (as SQLSink.Write says when its queue is
// full); each event acknowledged must reach the file once the stall ends,
// and no refused one may.
func TestReview55BufferBoundedWhileFileStalls(t *testing.T) {
	const bufSize = 4096
	for _, tc := range []struct {
		name  string
		write func(s *JSONLSink, ctx context.Context, e *Event) error
	}{
		{"write", func(s *JSONLSink, ctx context.Context, e *Event) error { return s.Write(ctx, e) }},
		{"keep", func(s *JSONLSink, ctx context.Context, e *Event) error {
			return s.Keep(ctx, e, json.RawMessage(`{"a":1}`))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1, BufferSize: bufSize})
			if err != nil {
				t.Fatal(err)
			}
			done, cancel := context.WithCancel(context.Background())
			cancel()
			// The most one event adds: its line, or Keep's estimate of it.
			line, _ := keepable(review55Event("e00000"), nil)
			if b, err := review55Event("e00000").AppendJSON(nil); err != nil {
				t.Fatal(err)
			} else {
				line = max(line, len(b)+1)
			}

			s.ioSem <- struct{}{} // a write of the file that hangs
			acked := map[string]bool{}
			refused := 0
			for i := range 10000 {
				e := review55Event(fmt.Sprintf("e%05d", i))
				switch err := tc.write(s, done, e); {
				case err == nil:
					acked[e.CorrelationID] = true
				case errors.Is(err, context.Canceled):
					refused++
				default:
					t.Fatalf("%s(%s) = %v, want nil or context.Canceled", tc.name, e.CorrelationID, err)
				}
			}
			s.mu.Lock()
			held := len(s.buf) + s.keptSize
			s.mu.Unlock()
			<-s.ioSem // the write returns

			if max := bufSize + 2*line; held > max {
				t.Errorf("after 10000 %ss while the file stalled, %d bytes are buffered (%d events acknowledged, %d refused), want at most %d (BufferSize %d)",
					tc.name, held, len(acked), refused, max, bufSize)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			got := map[string]bool{}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for ev, err := range ReadJSONL(f) {
				if err != nil {
					t.Fatalf("ReadJSONL: %v", err)
				}
				if got[ev.CorrelationID] {
					t.Errorf("%s recorded twice", ev.CorrelationID)
				}
				got[ev.CorrelationID] = true
			}
			if diff := cmp.Diff(acked, got); diff != "" {
				t.Errorf("recorded events differ from acknowledged ones (-acknowledged +recorded):\n%s", diff)
			}
		})
	}
}

// TestReview55FullBufferWaitsForFile: a Write that finds the buffer full
// while another write holds the file waits for it (its ctx is live), then
// records its event: the bound on the buffer refuses nothing a caller is
// willing to wait for.
func TestReview55FullBufferWaitsForFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1, BufferSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	s.ioSem <- struct{}{}
	// The first fills the buffer; its flush, cut by ctx, leaves it there.
	if err := s.Write(done, review55Event("first")); err != nil {
		t.Fatalf("Write(first) = %v, want nil: the buffer had room", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Write(context.Background(), review55Event("second")) }()
	select {
	case err := <-errc:
		t.Fatalf("Write(second) = %v while the file was held, want it to wait", err)
	case <-time.After(50 * time.Millisecond):
	}
	<-s.ioSem
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Write(second) = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Write(second) did not return once the file was free")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := QueryJSONL(path, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.CorrelationID)
	}
	if diff := cmp.Diff([]string{"first", "second"}, ids); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

func review55Event(id string) *Event {
	return &Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CorrelationID: id,
		Phase: PhaseOutcome, Tool: "refund", Subject: "alice"}
}
