package audit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestReview26bCloseRaces: Close twice, Flush, Write and WriteDurable at
// once, on SQLite, many times (run under -race). Every Write or
// WriteDurable that returned nil is committed (nothing is lost with a
// working database), exactly one Close returns nil and the others
// ErrClosed, and no goroutine of the sink (writer, checkpointer, Close's
// watch) outlives Close.
func TestReview26bCloseRaces(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenSQLite(filepath.Join(dir, "races.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	before := runtime.NumGoroutine()
	for round := range 40 {
		s, err := NewSQL(ctx, db, SQLite, &SQLOptions{QueueSize: 4, OnError: func(error) {}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := map[string]bool{}
		var closeErrs []error
		for i := range 8 {
			wg.Go(func() {
				id := fmt.Sprintf("r%d-%d", round, i)
				var err error
				if i%2 == 0 {
					err = s.WriteDurable(ctx, rvEvent(id, i))
				} else {
					err = s.Write(ctx, rvEvent(id, i))
				}
				switch {
				case err == nil:
					mu.Lock()
					accepted[id] = true
					mu.Unlock()
				case !errors.Is(err, ErrClosed):
					t.Errorf("write %s: %v", id, err)
				}
			})
		}
		wg.Go(func() {
			if err := s.Flush(ctx); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("Flush: %v", err)
			}
		})
		for range 2 {
			wg.Go(func() {
				err := s.Close()
				mu.Lock()
				closeErrs = append(closeErrs, err)
				mu.Unlock()
			})
		}
		wg.Wait()
		if closeErrs[0] != nil && closeErrs[1] != nil || !errors.Is(closeErrs[0], ErrClosed) && !errors.Is(closeErrs[1], ErrClosed) {
			t.Fatalf("round %d: Close errors %v, want one nil and one ErrClosed", round, closeErrs)
		}
		st := s.Stats()
		if st.Lost != 0 || st.Rows != uint64(len(accepted)) {
			t.Fatalf("round %d: Stats %+v, %d events accepted", round, st, len(accepted))
		}
		for id := range accepted {
			got, err := s.Query(ctx, Filter{CorrelationID: id})
			if err != nil || len(got) != 1 {
				t.Fatalf("round %d: %s: %d rows, %v", round, id, len(got), err)
			}
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after 40 sinks closed, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
