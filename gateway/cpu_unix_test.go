//go:build unix

package gateway

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used so
// far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
