//go:build unix

package audit_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used,
// all goroutines included; ok is false where it is not available.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
