package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReview16TornBetweenCheckAndWrite: another writer of the file tears a
// line after the sink checked the end of the file and before its write (the
// window TestReview16SharedFileSIGKILL cannot aim at): the torn line is
// appended here through a descriptor of the test's own, as the other
// process's cut write would be, and the sink's lines are then appended by
// appendChecked, the part of writeLines after the check. Each of the
// sink's lines reads back once.
func TestReview16TornBetweenCheckAndWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenJSONL(path, &JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := func(id string) *Event {
		return &Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CorrelationID: id, Phase: PhaseIntent, Tool: "refund"}
	}
	ctx := context.Background()
	if err := s.WriteDurable(ctx, ev("before")); err != nil {
		t.Fatal(err)
	}
	// Where the check found the file ending with a newline: the size the
	// sink's own last write left.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	checked := st.Size()
	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.WriteString(`{"time":"2026-01-02T03:04:05Z","correlation_id":"torn","de`); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, id := range []string{"l1", "l2", "l3"} {
		if b, err = ev(id).AppendJSON(b); err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
	}
	s.ioSem <- struct{}{}
	n, err := s.appendChecked(s.f, b, checked)
	<-s.ioSem
	if n != len(b) || err != nil {
		t.Fatalf("appendChecked = %d, %v; want %d, nil", n, err, len(b))
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int{}
	var bad []error
	for e, err := range ReadJSONL(f) {
		if err != nil {
			bad = append(bad, err)
			continue
		}
		got[e.CorrelationID]++
	}
	for _, id := range []string{"before", "l1", "l2", "l3"} {
		if got[id] != 1 {
			t.Errorf("%s read back %d times, want once (records %v, bad lines %v)", id, got[id], got, bad)
		}
	}
	if len(bad) != 1 || errors.Is(bad[0], ErrTornLine) {
		t.Errorf("bad lines %v, want one: the torn line, continued by l1's first copy", bad)
	}
}
