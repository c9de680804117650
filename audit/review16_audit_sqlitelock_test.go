package audit_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// lockFromOtherProcess starts the sqlite3 shell on the database at path,
// has it take the write lock (BEGIN IMMEDIATE) and returns once it holds
// it, with a function that ends its transaction and waits for it to exit.
// Without the sqlite3 shell it skips the test (fails it in CI: see
// testsvc.Missing).
func lockFromOtherProcess(t *testing.T, path string) (release func()) {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		testsvc.Missing(t, "audit: the sqlite3 shell (Debian package sqlite3) takes the lock from another process")
	}
	cmd := exec.Command(bin, path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "BEGIN IMMEDIATE;\n.print locked\n")
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "locked" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("sqlite3 did not take the lock: %q", sc.Text())
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			io.WriteString(in, "ROLLBACK;\n.quit\n")
			in.Close()
			io.Copy(io.Discard, out)
			if err := cmd.Wait(); err != nil {
				t.Errorf("sqlite3: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// TestReview16SQLiteLockedByAnotherProcess: another process (the sqlite3
// shell: an operator, a backup, a second server on the same file) holds the
// database's write lock while events are written.
//
// Within the busy timeout: every event, durable ones included, is recorded
// once the lock is released, and every WriteDurable returns nil.
//
// Past the busy timeout: a WriteDurable is refused rather than left
// waiting for as long as the lock is held (the write it announces must not
// hang), every event Write queued is recorded once the lock is released,
// and none is lost.
func TestReview16SQLiteLockedByAnotherProcess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		busy    time.Duration // busy_timeout
		hold    time.Duration // how long the other process holds the lock
		refused bool          // WriteDurable is refused while the lock is held
	}{
		{"within_busy_timeout", 5 * time.Second, 700 * time.Millisecond, false},
		{"past_busy_timeout", 50 * time.Millisecond, 3 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.db")
			db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(%d)&_txlock=immediate", path, tc.busy.Milliseconds()))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			s, err := audit.NewSQL(ctx, db, audit.SQLite, &audit.SQLOptions{OnError: func(error) {}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.WriteDurable(ctx, diskEvent("before", 10)); err != nil {
				t.Fatal(err)
			}
			release := lockFromOtherProcess(t, path)
			start := time.Now()
			const n = 40
			for i := range n {
				if err := s.Write(ctx, diskEvent(fmt.Sprintf("w-%d", i), 10)); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			durErr := make([]error, 3)
			took := make([]time.Duration, 3)
			for i := range durErr {
				wg.Go(func() {
					t0 := time.Now()
					durErr[i] = s.WriteDurable(ctx, diskEvent(fmt.Sprintf("d-%d", i), 10))
					took[i] = time.Since(t0)
				})
			}
			time.Sleep(tc.hold - time.Since(start))
			release()
			wg.Wait()
			for i, err := range durErr {
				switch {
				case tc.refused && err == nil:
					t.Errorf("WriteDurable d-%d while the lock was held past the busy timeout: nil after %v", i, took[i])
				case tc.refused && took[i] >= tc.hold:
					t.Errorf("WriteDurable d-%d waited %v, as long as the other process held the lock (%v): %v", i, took[i], tc.hold, err)
				case !tc.refused && err != nil:
					t.Errorf("WriteDurable d-%d within the busy timeout: %v", i, err)
				}
			}
			if err := s.Flush(ctx); err != nil {
				t.Errorf("Flush after the lock was released: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			got := map[string]int{}
			rs, err := db.Query(`SELECT correlation_id, COUNT(*) FROM audit_log GROUP BY correlation_id`)
			if err != nil {
				t.Fatal(err)
			}
			for rs.Next() {
				var id string
				var c int
				if err := rs.Scan(&id, &c); err != nil {
					t.Fatal(err)
				}
				got[id] = c
			}
			rs.Close()
			want := []string{"before"}
			for i := range n {
				want = append(want, fmt.Sprintf("w-%d", i))
			}
			for i, err := range durErr {
				if err == nil {
					want = append(want, fmt.Sprintf("d-%d", i))
				}
			}
			for _, id := range want {
				if got[id] != 1 {
					t.Errorf("%s recorded %d times, want once", id, got[id])
				}
			}
			for id, c := range got {
				if c > 1 {
					t.Errorf("%s recorded %d times", id, c)
				}
			}
			if st := s.Stats(); st.Lost != 0 {
				t.Errorf("Stats().Lost = %d, want 0", st.Lost)
			}
			t.Logf("WriteDurable: %v after %v", durErr, took)
		})
	}
}
