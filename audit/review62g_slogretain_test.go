package audit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// r62gHeldHandler is a JSON handler whose Handle waits for release first
// (a writer that stalled, then drained).
type r62gHeldHandler struct {
	slog.Handler
	release chan struct{}
	handled chan struct{}
}

func (h *r62gHeldHandler) Handle(ctx context.Context, r slog.Record) error {
	<-h.release
	defer close(h.handled)
	return h.Handler.Handle(ctx, r)
}

// r62gBuffer is a bytes.Buffer safe for the handler's goroutine.
type r62gBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *r62gBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *r62gBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestReview62gSlogSinkRetainsEvent: "Write must not retain e after it
// returns" (audit.Sink). A SlogSink's Write whose context ends hands the
// record to the handler on a goroutine of its own and returns; the
// record still holds e's Roles slice and Args map, which the caller may
// reuse once Write returned: the record written later shows what the
// caller put there afterwards (and a handler reading the map while the
// caller writes it is a data race, "concurrent map iteration and map
// write" at worst), not the event that was written.
func TestReview62gSlogSinkRetainsEvent(t *testing.T) {
	var out r62gBuffer
	h := &r62gHeldHandler{Handler: slog.NewJSONHandler(&out, nil),
		release: make(chan struct{}), handled: make(chan struct{})}
	s := audit.NewSlogSink(h, nil)
	e := diskEvent("c-1", 1)
	e.Roles = []string{"support"}
	e.Args = map[string]any{"amount": "10"}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Write(ctx, e); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write on a held handler: %v, want context.DeadlineExceeded", err)
	}
	// Write returned: e is the caller's again (a reused event).
	e.Roles[0] = "admin"
	e.Args["amount"] = "99999"
	close(h.release)
	select {
	case <-h.handled:
	case <-time.After(2 * time.Second):
		t.Fatal("the held record was not written once the handler was released")
	}
	got := out.String()
	if !strings.Contains(got, `"support"`) || !strings.Contains(got, `"amount":"10"`) {
		t.Errorf("the record written after Write returned shows the caller's later values, not the event written:\n%s", got)
	}
}
