package pgtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview19cPostgresRowTooLarge: a row of more text than one message to
// PostgreSQL carries (1 GiB: pgx refuses to send it, "message body too
// large", and the server would end the connection without an answer) fails
// without an SQLSTATE every time. Since the writer retries such an error
// as the server's silence (see answered), it would retry that row for as
// long as the sink is open, every event queued behind it held up, and
// lose them all at Close. Write and WriteDurable refuse such an event
// instead, with ErrInvalidEvent, and the events after it are recorded.
func TestReview19cPostgresRowTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("pgtest: an event of 1 GiB")
	}
	var srv server
	db := srv.db(t)
	var mu sync.Mutex
	var onErr []string
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(onErr) < 5 {
			onErr = append(onErr, shorten(err.Error()))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	big := failEvent("big", 0)
	big.Detail = strings.Repeat("d", 1<<30)
	werr := s.Write(context.Background(), big)
	derr := s.WriteDurable(context.Background(), big)
	big = nil
	if err := s.Write(context.Background(), failEvent("after", 1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ferr := s.Flush(ctx)
	got := counts(t, db)
	mu.Lock()
	seen := onErr
	mu.Unlock()
	if !errors.Is(werr, audit.ErrInvalidEvent) || !errors.Is(derr, audit.ErrInvalidEvent) {
		t.Errorf("Write, WriteDurable of an event of 1 GiB of text = %v, %v; want ErrInvalidEvent", werr, derr)
	}
	if ferr != nil || got["after-00001"] != 1 {
		t.Errorf("the event after one of 1 GiB: Flush = %v, recorded %d times, want once; Stats %+v; OnError: %q", ferr, got["after-00001"], s.Stats(), seen)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil && ferr == nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Errorf("Close has not returned after 2 minutes")
	}
}
