//go:build unix

package gateway

import (
	"syscall"
	"time"
)

// processUsage is the CPU time this process has used so far in user and
// in system mode, and its context switches (voluntary and not).
func processUsage() (user, sys time.Duration, switches int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), int64(ru.Nvcsw + ru.Nivcsw)
}
