package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestReview27OpenSQLiteTwiceAtOnce: two servers starting at once on one new
// audit database. OpenSQLite set journal_mode=WAL before busy_timeout, so the
// switch to WAL of one connection failed at once with SQLITE_BUSY while the
// other held the lock (about one start in twenty), instead of waiting.
func TestReview27OpenSQLiteTwiceAtOnce(t *testing.T) {
	dir := t.TempDir()
	const pairs = 60
	errs := make(chan error, 2*pairs)
	for i := range pairs {
		path := filepath.Join(dir, fmt.Sprintf("a%d.db", i))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				<-start
				db, err := OpenSQLite(path)
				if err != nil {
					errs <- err
					return
				}
				defer db.Close()
				s, err := NewSQL(context.Background(), db, SQLite, nil)
				if err != nil {
					errs <- err
					return
				}
				if err := s.Close(); err != nil {
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
