package main

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The twenty-third review's second round on the day's fixes.

// pausingWriter passes its writes to out, but holds the first write that
// contains at until release is closed: a demo writing to it stops there.
type pausingWriter struct {
	mu      sync.Mutex
	out     strings.Builder
	at      string
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (o *pausingWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), o.at) {
		o.once.Do(func() {
			close(o.reached)
			<-o.release
		})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.Write(p)
}

func (o *pausingWriter) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.String()
}

// burstSessionLine matches a record of the demo's burst session in its
// output; the first group is the session id, whose name ends in the run's
// id.
var burstSessionLine = regexp.MustCompile(`"session_id":"(rest-demo-burst-session-[0-9a-f]{12}@alice)"[^\n]*`)

// burstRecords returns the records the demo's output lists under its
// "Audit trail of session" heading, and the sessions they name.
func burstRecords(t *testing.T, out string) (n int, sessions map[string]bool) {
	t.Helper()
	_, trail, ok := strings.Cut(out, "=== Audit trail of session ")
	if !ok {
		t.Fatalf("no audit trail in the demo's output:\n%s", out)
	}
	sessions = map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  \{"session_id":"([^"]*)"`).FindAllStringSubmatch(trail, -1) {
		n++
		sessions[m[1]] = true
	}
	return n, sessions
}

// TestReview23bConcurrentDemosShowOnlyTheirOwnRecords: the demo prints the
// audit records of its burst session, "this run's only" (demo.go) with a
// kept trail (--audit-dir, --audit-postgres). It chose them by session id
// and time, and the burst session's id is the same in every run
// (rest-demo-burst-session@alice): two demos sharing one trail at once
// (two terminals, a script running it twice, one PostgreSQL database)
// each listed the other's burst as its own, 12 records for a burst of 6
// calls, as examples/demo did before its run ids. The second demo here
// runs whole while the first is paused after its burst; each must list
// the 6 records of its own burst, of one session.
func TestReview23bConcurrentDemosShowOnlyTheirOwnRecords(t *testing.T) {
	cfg, name, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := &pausingWriter{at: "call 6/6", reached: make(chan struct{}), release: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- runDemo(context.Background(), first, name, cfg, false, dir, "", nil) }()
	select {
	case <-first.reached:
	case err := <-errc:
		t.Fatalf("the first demo ended before its pause: %v\n%s", err, first.String())
	}
	var second strings.Builder
	err = runDemo(context.Background(), &second, name, cfg, false, dir, "", nil)
	close(first.release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	n1, s1 := burstRecords(t, first.String())
	n2, s2 := burstRecords(t, second.String())
	if n1 != 6 || len(s1) != 1 {
		t.Errorf("first demo, around the second: %d records of sessions %v, want the 6 of its own burst\n%s", n1, s1, first.String())
	}
	if n2 != 6 || len(s2) != 1 {
		t.Errorf("second demo, during the first: %d records of sessions %v, want the 6 of its own burst\n%s", n2, s2, second.String())
	}
	for s := range s1 {
		if s2[s] {
			t.Errorf("both demos list the records of session %s as their own", s)
		}
	}
}
