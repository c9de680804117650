//go:build !unix

package pgtest

import (
	"testing"
	"time"
)

// restart is not supported here (nor reached: the throwaway PostgreSQL
// server a pgFailServer runs on is started on unix systems only). Like the
// unix restart it reports with t.Error, as it may run off the test's
// goroutine.
func (p *pgFailServer) restart(t *testing.T, down time.Duration) {
	t.Helper()
	t.Error("restarting PostgreSQL is supported on unix systems only")
}
