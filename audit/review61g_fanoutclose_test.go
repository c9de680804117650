package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testlog"
)

// r61gCloser is a sink that records its Close, or panics in it (a custom
// sink's bug).
type r61gCloser struct {
	r61dRecorder
	panics bool
	closed bool
}

func (s *r61gCloser) Close() error {
	if s.panics {
		panic("review61g: the sink's Close has a bug")
	}
	s.closed = true
	return nil
}

// TestReview61gFanoutClosePanic: Fanout's doc says a sink that panics (its
// bug) has failed, the panic logged, and Close "closes every sink that
// implements io.Closer and returns their errors". A sink whose Close
// panics ended the fanout's Close there: the sinks after it (a JSONL
// trail whose buffer Close flushes) were never closed, and the panic went
// on up to the caller, at shutdown, instead of an error.
func TestReview61gFanoutClosePanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	bad := &r61gCloser{panics: true}
	good := &r61gCloser{}
	f := audit.Fanout(bad, good)
	if err := f.Write(context.Background(), &audit.Event{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("a sink's panic in Close escaped the fanout: %v", v)
			}
		}()
		err = f.Close()
	}()
	if !good.closed {
		t.Errorf("the sink after the one whose Close panicked was not closed")
	}
	if err == nil {
		t.Errorf("Close returned nil though a sink's Close panicked")
	}
	if err2 := f.Close(); !errors.Is(err2, audit.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err2)
	}
	if l := logged.String(); !strings.Contains(l, "panicked") {
		t.Errorf("the log does not say that the sink panicked:\n%s", l)
	}
}
