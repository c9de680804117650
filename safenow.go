package mcpguard

import (
	"log/slog"
	"runtime/debug"
	"time"
)

// safeNow returns now, but for a panic of it (the operator's code: a test
// clock's bug), which is logged with its stack, time.Now read instead. The
// guard reads its clock before its pipeline's recover, and in it: a clock
// that panicked there ended the process (the go-sdk recovers none).
func safeNow(now func() time.Time, log *slog.Logger) func() time.Time {
	return func() (t time.Time) {
		defer func() {
			if v := recover(); v != nil {
				log.Error("mcpguard: Options.Now panicked; time.Now is read instead", "panic", panicText(v), "stack", string(debug.Stack()))
				t = time.Now()
			}
		}()
		return now()
	}
}
