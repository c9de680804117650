package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testlog"
)

// r61dRecorder records the events written to it.
type r61dRecorder struct {
	mu  sync.Mutex
	evs []audit.Event
}

func (s *r61dRecorder) Write(_ context.Context, e *audit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, *e)
	return nil
}

func (s *r61dRecorder) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.evs)
}

// r61dKeepRecorder is an r61dRecorder that is a Keeper.
type r61dKeepRecorder struct{ r61dRecorder }

func (s *r61dKeepRecorder) Keep(ctx context.Context, e *audit.Event, _ json.RawMessage) error {
	return s.Write(ctx, e)
}

// TestReview61dFanoutSinkPanic: Fanout promises that a sink that fails
// leaves the others recording the event ("the other sinks still record
// the event"), and the guard and the gateway treat a sink's panic (its
// bug) as its write failing. A sink of a fanout that panicked ended the
// fanout's Write, Keep and WriteDurable there: the sinks after it (the
// trail an operator added beside a custom one) never got the event, and
// the panic went on up to the caller instead of an error.
func TestReview61dFanoutSinkPanic(t *testing.T) {
	logged := testlog.CaptureDefault(t)
	panicky := audit.SinkFunc(func(context.Context, *audit.Event) error { panic("review61d: the sink's bug") })
	ev := func() *audit.Event {
		return &audit.Event{Time: time.Now(), CorrelationID: "c1", Tool: "t", Phase: audit.PhaseOutcome, Allowed: true}
	}
	for _, tc := range []struct {
		name string
		do   func(f *audit.FanoutSink) error
	}{
		{"Write", func(f *audit.FanoutSink) error { return f.Write(context.Background(), ev()) }},
		{"Keep", func(f *audit.FanoutSink) error { return f.Keep(context.Background(), ev(), json.RawMessage(`{}`)) }},
		{"WriteDurable", func(f *audit.FanoutSink) error { return f.WriteDurable(context.Background(), ev()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, keeper := &r61dRecorder{}, &r61dKeepRecorder{}
			f := audit.Fanout(panicky, plain, keeper)
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("the sink's panic went on up out of the fanout: %v", v)
					}
				}()
				err = tc.do(f)
			}()
			if err == nil {
				t.Errorf("nil error from a fanout one of whose sinks panicked")
			}
			if plain.n() != 1 || keeper.n() != 1 {
				t.Errorf("the other sinks recorded %d and %d events, want 1 each", plain.n(), keeper.n())
			}
		})
	}
	if l := logged.String(); !strings.Contains(l, "panicked") || !strings.Contains(l, "goroutine") {
		t.Errorf("the log does not say, with its stack, that the sink panicked:\n%s", l)
	}
}
