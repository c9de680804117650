package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns the
// directory and a function that remounts it with new options
// ("size=1m"). It skips the test where mounting is not permitted (not root,
// no CAP_SYS_ADMIN, or no mount(8)).
func smallDisk(t *testing.T, size string) (dir string, remount func(opts string)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("audit: mounting a small tmpfs to fill needs root")
	}
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("audit: cannot mount a tmpfs (%v: %s): the full-disk case needs mount(8) and CAP_SYS_ADMIN", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir, func(opts string) {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
			t.Fatalf("remount %s %s: %v: %s", dir, opts, err, out)
		}
	}
}

// diskEvent is event id with a detail of n bytes.
func diskEvent(id string, n int) *audit.Event {
	return &audit.Event{
		Time: time.Now().UTC(), CorrelationID: id, SessionID: "s", Subject: "alice", Tool: "refund",
		Class: "write", Phase: audit.PhaseIntent, Allowed: true, Detail: strings.Repeat("d", n),
	}
}

// readDiskFile returns the ids of the records of a JSONL file and its line errors.
func readDiskFile(t *testing.T, path string) (ids map[string]int, lineErrs []error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids = map[string]int{}
	for e, err := range audit.ReadJSONL(f) {
		if err != nil {
			lineErrs = append(lineErrs, err)
			continue
		}
		ids[e.CorrelationID]++
	}
	return ids, lineErrs
}

// TestJSONLFullDisk fills the file system under a JSONL sink with many
// concurrent WriteDurable callers. Every call that returned nil is in the
// file; once a write fails every later one fails too; the file holds at
// most one torn line (never read as a record); Close reports the failure;
// and once there is room again a reopened sink appends after the torn line.
func TestJSONLFullDisk(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable_%v", durable), func(t *testing.T) {
			dir, remount := smallDisk(t, "256k")
			path := filepath.Join(dir, "audit.jsonl")
			s, err := audit.OpenJSONL(path, &audit.JSONLOptions{Durable: durable, BufferSize: 8 << 10})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var mu sync.Mutex
			acked := map[string]bool{}
			var failedAfter []string // writes that succeeded after one had failed
			var firstFail time.Time
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := 0; i < 400; i++ {
						id := fmt.Sprintf("w%d-%d", w, i)
						// A write that began once another had failed
						// must fail (one that began before may still
						// have made it: its line was in the buffer).
						mu.Lock()
						failedBefore := !firstFail.IsZero()
						mu.Unlock()
						err := s.WriteDurable(ctx, diskEvent(id, 700+i%300))
						now := time.Now()
						mu.Lock()
						if err == nil {
							acked[id] = true
							if failedBefore {
								failedAfter = append(failedAfter, id)
							}
						} else if firstFail.IsZero() {
							firstFail = now
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if firstFail.IsZero() {
				t.Fatal("256 KiB took every event: the disk never filled")
			}
			if len(failedAfter) > 0 {
				t.Errorf("WriteDurable succeeded after a failed write: %v", failedAfter[:min(5, len(failedAfter))])
			}
			if err := s.Close(); err == nil {
				t.Errorf("Close on a full disk = nil")
			}
			ids, lineErrs := readDiskFile(t, path)
			var missing []string
			for id := range acked {
				if ids[id] != 1 {
					missing = append(missing, fmt.Sprintf("%s×%d", id, ids[id]))
				}
			}
			if len(missing) > 0 {
				t.Errorf("%d acknowledged events not in the file once: %v", len(missing), missing[:min(5, len(missing))])
			}
			if len(lineErrs) > 1 {
				t.Errorf("%d bad lines after a full disk, want at most the torn last one: %v", len(lineErrs), lineErrs)
			}
			for _, err := range lineErrs {
				if !errors.Is(err, audit.ErrTornLine) {
					t.Errorf("bad line: %v, want a torn last line", err)
				}
			}
			t.Logf("%d events acknowledged, %d records in the file, line errors: %v", len(acked), len(ids), lineErrs)
			// A line cut just before its newline holds a whole record:
			// the reopened sink ends it, and it reads back as one (its
			// writer was told it failed, as OpenJSONL's doc says).
			wantRecords, wantLineErrs := len(ids)+1, len(lineErrs)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			torn := raw[bytes.LastIndexByte(raw, '\n')+1:]
			if len(torn) > 0 {
				for e, err := range audit.ReadJSONL(bytes.NewReader(append(torn, '\n'))) {
					if err != nil {
						break
					}
					if acked[e.CorrelationID] {
						t.Errorf("the torn line's event %s was acknowledged", e.CorrelationID)
					}
					t.Logf("the torn line is whole but for its newline (event %s)", e.CorrelationID)
					wantRecords, wantLineErrs = len(ids)+2, len(lineErrs)-1
				}
			}

			remount("size=4m")
			s2, err := audit.OpenJSONL(path, nil)
			if err != nil {
				t.Fatalf("reopen after room was made: %v", err)
			}
			if err := s2.WriteDurable(ctx, diskEvent("after", 10)); err != nil {
				t.Fatalf("WriteDurable after room was made: %v", err)
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			ids2, lineErrs2 := readDiskFile(t, path)
			if ids2["after"] != 1 || len(ids2) != wantRecords || len(lineErrs2) != wantLineErrs {
				t.Errorf("after reopening: %d records (want %d), %d line errors (want %d), \"after\" ×%d",
					len(ids2), wantRecords, len(lineErrs2), wantLineErrs, ids2["after"])
			}
		})
	}
}

// TestSQLiteFullDiskThenRoom fills the file system under a SQLite database
// (real ENOSPC, not max_page_count) while events stream in. WriteDurable
// reports the failure instead of waiting for as long as it lasts; events
// queued by Write wait and are all recorded once there is room again.
func TestSQLiteFullDiskThenRoom(t *testing.T) {
	dir, remount := smallDisk(t, "512k")
	db, err := audit.OpenSQLite(filepath.Join(dir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var nErr sync.Map
	s, err := audit.NewSQL(context.Background(), db, audit.SQLite, &audit.SQLOptions{
		OnError: func(err error) { nErr.Store(err.Error(), true) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acked []string
	durFailed := 0
	for i := 0; i < 1500; i++ {
		id := fmt.Sprintf("e%04d", i)
		if i%50 == 0 {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := s.WriteDurable(dctx, diskEvent(id, 600))
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("WriteDurable on a full disk waited 10s instead of reporting it")
			}
			if err != nil {
				durFailed++
				continue
			}
		} else if err := s.Write(ctx, diskEvent(id, 600)); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, id)
	}
	if durFailed == 0 {
		t.Fatal("512 KiB took every event: the disk never filled")
	}
	remount("size=16m")
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Flush(fctx); err != nil {
		t.Errorf("Flush once there is room: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	got := map[string]int{}
	rs, err := db.Query(`SELECT correlation_id FROM audit_log`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id string
		rs.Scan(&id)
		got[id]++
	}
	rs.Close()
	var missing []string
	for _, id := range acked {
		if got[id] != 1 {
			missing = append(missing, fmt.Sprintf("%s×%d", id, got[id]))
		}
	}
	if len(missing) > 0 || s.Stats().Lost != 0 {
		t.Errorf("after the disk had room again: %d of %d accepted events not recorded once (%v), Stats = %+v",
			len(missing), len(acked), missing[:min(5, len(missing))], s.Stats())
	}
	n := 0
	nErr.Range(func(k, _ any) bool {
		if n < 3 {
			t.Logf("OnError: %v", k)
		}
		n++
		return true
	})
	t.Logf("%d WriteDurable refused while full, %d events recorded", durFailed, len(got))
}
