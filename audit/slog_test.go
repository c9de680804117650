package audit_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/audit/audittest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// slogHarness reads the JSON handler's output back as JSONL: the record's
// time, level and msg sit next to the event's fields.
func slogHarness(t *testing.T) audittest.Harness {
	var buf lockedBuffer
	s := audit.NewSlogSink(slog.NewJSONHandler(&buf, nil), nil)
	return audittest.Harness{Sink: s, Read: func(ctx context.Context) ([]audit.Event, error) {
		var out []audit.Event
		for ev, err := range audit.ReadJSONL(strings.NewReader(buf.String())) {
			if err != nil {
				return out, err
			}
			out = append(out, ev)
		}
		return out, nil
	}}
}

func TestSlogSinkConformance(t *testing.T) { audittest.Run(t, slogHarness) }

func TestSlogSinkLevels(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})
	s := audit.NewSlogSink(h, &audit.SlogSinkOptions{Message: "decision"})
	allowed := event("ok", 1)
	denied := event("no", 2)
	denied.Allowed, denied.Code = false, "FORBIDDEN"
	for _, e := range []*audit.Event{allowed, denied} {
		if err := s.Write(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if strings.Contains(out, "correlation_id=ok") || !strings.Contains(out, `level=WARN msg=decision correlation_id=no`) {
		t.Errorf("handler output %q: want only the denied event, at WARN", out)
	}
}

func TestEventLogValue(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	e := event("c1", 0)
	e.Roles = []string{"admin"}
	l.Info("call", "audit", e)
	want := `{"level":"INFO","msg":"call","audit":{"time":"2026-07-28T00:00:00Z","correlation_id":"c1","session_id":"s","subject":"alice","roles":["admin"],"tool":"search_docs","class":"read","phase":"outcome","allowed":true,"dry_run":false,"latency_ms":0.5,"args_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}` + "\n"
	if diff := gocmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("slog output (-want +got):\n%s", diff)
	}
}

func TestFanoutConformance(t *testing.T) {
	audittest.Run(t, fanoutHarness(func(s audit.Sink) audit.Sink { return s }))
}

func TestFanoutDurableFailsIfAnySinkFails(t *testing.T) {
	s, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("boom")
	var plainCalls int
	f := audit.Fanout(s, audit.SinkFunc(func(context.Context, *audit.Event) error { plainCalls++; return boom }))
	if err := audit.WriteDurable(context.Background(), f, event("c", 1)); !errors.Is(err, boom) {
		t.Errorf("WriteDurable = %v, want boom", err)
	}
	if plainCalls != 1 {
		t.Errorf("plain sink called %d times, want 1 (through Write)", plainCalls)
	}
	if err := audit.WriteDurable(context.Background(), audit.Fanout(), event("c", 1)); !errors.Is(err, audit.ErrNoSink) {
		t.Errorf("WriteDurable on an empty fanout = %v, want ErrNoSink", err)
	}
	if err := audit.WriteDurable(context.Background(), nil, event("c", 1)); !errors.Is(err, audit.ErrNoSink) {
		t.Errorf("WriteDurable(nil sink) = %v, want ErrNoSink", err)
	}
}

func sortEvents(evs []audit.Event) {
	slices.SortFunc(evs, func(a, b audit.Event) int {
		return cmp.Or(strings.Compare(a.CorrelationID, b.CorrelationID), strings.Compare(string(a.Phase), string(b.Phase)))
	})
}
