package audit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview21cJSONLBufferedFullDisk: a buffered sink (plain Write, Flush)
// on a file system that fills. Every Write before a Flush that returned nil
// is in the file once; the failed write's error reaches the call that made
// it (a Write that filled the buffer, or Flush) and every call after it;
// the file holds at most one torn line, its last, and no record after it.
func TestReview21cJSONLBufferedFullDisk(t *testing.T) {
	dir, _ := smallDisk(t, "64k")
	path := filepath.Join(dir, "audit.jsonl")
	s, err := audit.OpenJSONL(path, &audit.JSONLOptions{BufferSize: 3000, FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	flushedUpTo := 0 // events 0..flushedUpTo-1 were written before a Flush that returned nil
	var first error
	i := 0
	for ; i < 10000 && first == nil; i++ {
		if first = s.Write(ctx, diskEvent(fmt.Sprint("e", i), 300+i%500)); first != nil {
			break
		}
		if i%7 == 6 {
			if first = s.Flush(); first == nil {
				flushedUpTo = i + 1
			}
		}
	}
	if first == nil {
		t.Fatal("64 KiB took every event: the disk never filled")
	}
	if !errors.Is(first, syscall.ENOSPC) {
		t.Errorf("the first failure = %v, want ENOSPC", first)
	}
	// Every call after the failure reports it.
	for name, err := range map[string]error{
		"Write":        s.Write(ctx, diskEvent("late-write", 1)),
		"Flush":        s.Flush(),
		"WriteDurable": s.WriteDurable(ctx, diskEvent("late-durable", 1)),
		"Sync":         s.Sync(),
		"Keep":         s.Keep(ctx, diskEvent("late-keep", 1), nil),
	} {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("%s after a failed write = %v, want the sticky ENOSPC", name, err)
		}
	}
	if err := s.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close after a failed write = %v, want ENOSPC", err)
	}
	checkTrail(t, path, flushedUpTo, "e")
}

// checkTrail checks that events prefix0 .. prefix<n-1> are each in the
// JSONL file at path once, that no late- event is, and that the file has at
// most one bad line, a torn last line.
func checkTrail(t *testing.T, path string, n int, prefix string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids, lineErrs := readDiskFile(t, path)
	for i := range n {
		if id := fmt.Sprint(prefix, i); ids[id] != 1 {
			t.Errorf("event %s, flushed before the failure, is in the file %d times", id, ids[id])
		}
	}
	for id := range ids {
		if len(id) > 5 && id[:5] == "late-" {
			t.Errorf("event %s, refused after the failure, is in the file", id)
		}
	}
	if len(lineErrs) > 1 {
		t.Errorf("%d bad lines, want at most one torn last line: %v", len(lineErrs), lineErrs)
	}
	for _, err := range lineErrs {
		if !errors.Is(err, audit.ErrTornLine) {
			t.Errorf("bad line %v, want a torn last line", err)
		}
	}
	t.Logf("%d bytes, %d records (%d flushed before the failure), line errors %v", len(raw), len(ids), n, lineErrs)
}

// TestReview21cJSONLDevFull: on /dev/full (every write fails with ENOSPC)
// no WriteDurable of a group of concurrent callers returns nil, and each
// reports ENOSPC; a buffered sink's Flush reports it, and so does every
// call after it.
func TestReview21cJSONLDevFull(t *testing.T) {
	s, err := audit.OpenJSONL("/dev/full", &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Skipf("cannot open /dev/full: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for w := range errs {
		wg.Go(func() { errs[w] = s.WriteDurable(context.Background(), diskEvent(fmt.Sprint("d", w), 100)) })
	}
	wg.Wait()
	for w, err := range errs {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("WriteDurable %d on /dev/full = %v, want ENOSPC", w, err)
		}
	}
	if err := s.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close = %v, want ENOSPC", err)
	}

	b, err := audit.OpenJSONL("/dev/full", &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(context.Background(), diskEvent("b0", 10)); err != nil {
		t.Fatalf("buffered Write = %v, want nil (nothing written yet)", err)
	}
	if err := b.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Flush = %v, want ENOSPC", err)
	}
	if err := b.Write(context.Background(), diskEvent("b1", 10)); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Write after a failed Flush = %v, want ENOSPC", err)
	}
	if err := b.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close = %v, want ENOSPC", err)
	}
}
