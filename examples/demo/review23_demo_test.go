package main

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// pausingOutput passes its writes to out, but holds the write that
// contains at until release is closed: the walkthrough stops there.
type pausingOutput struct {
	out     strings.Builder
	at      string
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (o *pausingOutput) Write(p []byte) (int, error) {
	if strings.Contains(string(p), o.at) {
		o.once.Do(func() {
			close(o.reached)
			<-o.release
		})
	}
	return o.out.Write(p)
}

// trailHead returns the "Audit trail (N records ..." line of a
// walkthrough's output.
func trailHead(t *testing.T, s string) string {
	t.Helper()
	i := strings.Index(s, "Audit trail (")
	if i < 0 {
		t.Fatalf("no audit trail in the output:\n%s", s)
	}
	line, _, _ := strings.Cut(s[i:], "\n")
	return line
}

// TestReview23ConcurrentRunsShowOnlyTheirOwnRecords: the demo says that,
// with a kept database (-audit), it prints the records of its own run.
// It chose them by time alone (every record since the run started), so
// two runs sharing one database at once, two terminals or a script
// running the demo twice, each listed the other's records as its own:
// bob's and ada's calls twice over, an anonymous call twice. The second
// run here runs whole while the first is paused in its middle; each
// must list as many records as a run alone.
func TestReview23ConcurrentRunsShowOnlyTheirOwnRecords(t *testing.T) {
	var alone strings.Builder
	if err := run(filepath.Join(t.TempDir(), "alone.db"), &alone); err != nil {
		t.Fatal(err)
	}
	want := trailHead(t, alone.String())
	want = strings.Replace(want, "alone.db", "audit.db", 1)

	path := filepath.Join(t.TempDir(), "audit.db")
	first := &pausingOutput{at: "Spend cap", reached: make(chan struct{}), release: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- run(path, first) }()
	select {
	case <-first.reached:
	case err := <-errc:
		t.Fatalf("the first run ended before its pause: %v\n%s", err, first.out.String())
	}
	var second strings.Builder
	err := run(path, &second)
	close(first.release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := trailHead(t, second.String()); got != want {
		t.Errorf("second run, during the first: %q, want %q (this run's records only)", got, want)
	}
	if got := trailHead(t, first.out.String()); got != want {
		t.Errorf("first run, around the second: %q, want %q (this run's records only)", got, want)
	}
}
