package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview58bSQLiteFileRemoved: the SQLite database (and its -wal and
// -shm files, or the directory holding them) is removed while the sink
// runs. SQLite goes on writing to the files it has open, which have no
// name left: WriteDurable, Flush and Close all report success (Stats
// counts the rows committed, none lost) for events that vanish with the
// process, in no file anyone can open. The JSONL sink refuses exactly
// this ("rather than let records vanish with a file nobody can open", see
// JSONLSink): it moves to the path or reports a failed write. A nil
// error from WriteDurable is the write-ahead intent's "recorded"
// (audit.Sink: "A nil error means the event is recorded"); here it is
// recorded nowhere, and nothing told the operator. Now the writer checks
// the file after each batch and counts the batch lost when it moved.
func TestReview58bSQLiteFileRemoved(t *testing.T) {
	for _, whole := range []bool{false, true} {
		name := "files"
		if whole {
			name = "directory"
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "trail")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "audit.db")
			db, err := audit.OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{OnError: func(error) {}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			ev := func(id string) *audit.Event {
				return &audit.Event{Time: time.Unix(1_800_000_000, 0), CorrelationID: id, Phase: audit.PhaseIntent, Tool: "refund", Class: "write", Allowed: true}
			}
			if err := s.WriteDurable(ctx, ev("before")); err != nil {
				t.Fatal(err)
			}
			if whole {
				err = os.RemoveAll(dir)
			} else {
				for _, suffix := range []string{"", "-wal", "-shm"} {
					if rerr := os.Remove(path + suffix); rerr != nil && !os.IsNotExist(rerr) {
						err = rerr
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			durErr := s.WriteDurable(ctx, ev("after"))
			werr := s.Write(ctx, ev("queued"))
			flushErr := s.Flush(ctx)
			st := s.Stats()
			closeErr := s.Close()
			if durErr == nil || !strings.Contains(durErr.Error(), "removed or replaced") {
				t.Errorf("WriteDurable after the database was removed: %v; want an error saying so", durErr)
			}
			if werr != nil || flushErr == nil {
				t.Errorf("Write, then Flush after the database was removed: %v, %v; want nil, then the loss", werr, flushErr)
			}
			if st.Lost != 2 || closeErr == nil {
				t.Errorf("Stats %+v, Close %v; want the 2 events written after the removal lost, and Close saying so", st, closeErr)
			}
		})
	}
}
