package pgtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestPostgresWriteDurableRacingClose: a WriteDurable that races Close
// either records its event or returns ErrClosed, never another error (a
// closed statement) and never a statement prepared after Close.
func TestPostgresWriteDurableRacingClose(t *testing.T) {
	var srv server
	srv.once.Do(func() { srv.pg = testsvc.StartPostgres(t) })
	ctx := context.Background()
	db := srv.db(t)
	for round := range 40 {
		s, err := audit.NewSQL(ctx, db, audit.Postgres, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 16 {
			wg.Go(func() {
				for j := 0; ; j++ {
					e := &audit.Event{Time: time.Now(), CorrelationID: fmt.Sprintf("r%d-%d-%d", round, i, j),
						Tool: "t", Subject: "u", Phase: audit.PhaseIntent, Allowed: true}
					err := s.WriteDurable(ctx, e)
					if errors.Is(err, audit.ErrClosed) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: WriteDurable racing Close: %v (want nil or ErrClosed)", round, err)
		}
	}
}
