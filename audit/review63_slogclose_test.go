package audit_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview63SlogSinkCloseTwice: a second Close of a SlogSink returned
// nil where every other sink's (JSONL, SQL, Fanout) returns ErrClosed: code
// closing sinks through the Sink interface saw a double close of one kind
// and not of another.
func TestReview63SlogSinkCloseTwice(t *testing.T) {
	s := audit.NewSlogSink(slog.NewTextHandler(io.Discard, nil), nil)
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}
