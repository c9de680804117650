package pgtest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview21cPostgresPoisonRow: one row the server always refuses with a
// class 53 error (53200, out of memory, raised by a BEFORE INSERT trigger
// for one tool name), which the writer treats as of the moment. While the
// sink is open the writer retries that row, and every event queued after
// it waits: Flush does not return, Write blocks once the queue is full
// (until its context ends). WriteDurable inserts on a connection of its own
// and is not held up. Close gives up the row after a few attempts, counts
// it lost and records the events queued behind it.
func TestReview21cPostgresPoisonRow(t *testing.T) {
	var srv server
	db := srv.db(t)
	var onErr atomic.Int64
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{
		QueueSize: 16,
		OnError:   func(error) { onErr.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.tool = 'poison' THEN
		RAISE EXCEPTION 'out of memory (test)' USING ERRCODE = '53200';
	END IF;
	RETURN NEW;
END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION poison()`); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	p := failEvent("poison", 0)
	p.Tool = "poison"
	if err := s.Write(bg, p); err != nil {
		t.Fatal(err)
	}
	// Let the writer take the poison row before the others are queued.
	time.Sleep(200 * time.Millisecond)
	accepted := 0
	var blockedAt = -1
	var werr error
	for i := 1; i <= 40; i++ {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		werr = s.Write(ctx, failEvent("after", i))
		cancel()
		if werr != nil {
			blockedAt = i
			break
		}
		accepted++
	}
	fctx, cancel := context.WithTimeout(bg, 5*time.Second)
	ferr := s.Flush(fctx)
	cancel()
	dctx, cancel := context.WithTimeout(bg, 5*time.Second)
	derr := s.WriteDurable(dctx, failEvent("durable", 0))
	cancel()
	t.Logf("accepted %d Writes; Write %d: %v; Flush: %v; WriteDurable: %v; OnError calls: %d",
		accepted, blockedAt, werr, ferr, derr, onErr.Load())

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	var cerr error
	select {
	case cerr = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Close has not returned after 2 minutes")
	}
	got := counts(t, db)
	st := s.Stats()
	t.Logf("Close after %v: %v; Stats %+v; rows %d", time.Since(start).Round(time.Millisecond), cerr, st, len(got))

	if blockedAt < 0 || !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("Write behind a poison row never blocked (accepted %d): %v", accepted, werr)
	}
	if !errors.Is(ferr, context.DeadlineExceeded) {
		t.Errorf("Flush behind a poison row = %v, want it held until its context ended", ferr)
	}
	if derr != nil || got["durable-00000"] != 1 {
		t.Errorf("WriteDurable while a poison row blocks the queue = %v, recorded %d times", derr, got["durable-00000"])
	}
	if cerr == nil || st.Lost != 1 || got["poison-00000"] != 0 {
		t.Errorf("Close = %v, Lost %d; want an error and the poison row alone lost", cerr, st.Lost)
	}
	var missing []string
	for i := 1; i <= accepted; i++ {
		if id := failEvent("after", i).CorrelationID; got[id] != 1 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d accepted events queued behind the poison row not recorded at Close: %v", len(missing), accepted, missing)
	}
}

// TestReview21cPostgresPoisonInBatch: the poison row of
// TestReview21cPostgresPoisonRow in the middle of a batch. The events of
// that batch after it wait while the sink is open; at Close the writer
// gives up the poison row, and the events after it, which the server
// takes, must be recorded, not given up with it.
func TestReview21cPostgresPoisonInBatch(t *testing.T) {
	var srv server
	db := srv.db(t)
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.tool = 'poison' THEN
		RAISE EXCEPTION 'out of memory (test)' USING ERRCODE = '53200';
	END IF;
	RETURN NEW;
END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION poison()`); err != nil {
		t.Fatal(err)
	}
	// Hold the writer on a row lock, so that the events queue and go into
	// one batch.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE audit_log IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if err := s.Write(bg, failEvent("first", 0)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the writer waits for the lock with "first"
	const n = 20
	for i := range n {
		e := failEvent("b", i)
		if i == n/2 {
			e.Tool = "poison"
		}
		if err := s.Write(bg, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the writer retries the poison row
	start := time.Now()
	cerr := s.Close()
	got := counts(t, db)
	st := s.Stats()
	t.Logf("Close after %v: %v; Stats %+v", time.Since(start).Round(time.Millisecond), cerr, st)
	var missing []string
	for i := range n {
		if id := failEvent("b", i).CorrelationID; i != n/2 && got[id] != 1 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 || st.Lost != 1 {
		t.Errorf("Close with a poison row in a batch: Lost %d, %d events the server takes not recorded: %v", st.Lost, len(missing), missing)
	}
}

// TestReview21cPostgresAllRowsFailAtClose: the server answers every row
// with a class 53 error (53100, disk full) while many events are queued.
// Close gives them up after a bounded number of attempts (the row it was
// retrying, and one attempt for the next), not three attempts for each.
func TestReview21cPostgresAllRowsFailAtClose(t *testing.T) {
	var srv server
	db := srv.db(t)
	s, err := audit.NewSQL(context.Background(), db, audit.Postgres, &audit.SQLOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE FUNCTION diskfull() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'disk full (test)' USING ERRCODE = '53100';
END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER diskfull BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION diskfull()`); err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		if err := s.Write(context.Background(), failEvent("full", i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // the writer retries with a backoff of 1s
	start := time.Now()
	cerr := s.Close()
	took := time.Since(start)
	st := s.Stats()
	t.Logf("Close after %v: %v; Stats %+v", took.Round(time.Millisecond), cerr, st)
	if cerr == nil || st.Lost != n {
		t.Errorf("Close = %v, Lost %d; want an error and %d lost", cerr, st.Lost, n)
	}
	if took > 15*time.Second {
		t.Errorf("Close took %v to give up %d rows the server keeps refusing", took, n)
	}
}
