package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestReview28OpenJSONLFileRenameRace: a rotator that renames the file away
// again between openJSONLFile's two opens (O_EXCL finds it, the plain open
// no longer does) made Reopen fail with ENOENT (TestReview25bSIGHUPStorm's
// rare failure in CI). The open creates the file then.
func TestReview28OpenJSONLFileRenameRace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; !stop.Load(); k++ {
			if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				f.Close()
			}
			os.Rename(path, path+"."+strconv.Itoa(k%4))
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	fails := 0
	n := 0
	for ; time.Now().Before(deadline); n++ {
		f, err := openJSONLFile(path, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				fails++
				continue
			}
			t.Fatalf("open %d: %v", n, err)
		}
		f.Close()
	}
	stop.Store(true)
	<-done
	if fails > 0 {
		t.Errorf("%d of %d opens failed with ENOENT while the file was renamed away", fails, n)
	}
}
