package testsvc

import (
	"runtime"
	"time"
)

// WorkTime runs f on the calling goroutine, locked to its thread, and
// returns the CPU time that thread spent in it where the system tells it
// (Linux), the wall time elsewhere. A test that compares the cost of two
// inputs (linear, not quadratic) then measures their work, not how long
// each waited for a CPU on a busy machine: a longer run is preempted more
// often, and its wall time tells that. Work f hands to other goroutines is
// not counted on Linux.
func WorkTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	cpu0, ok0 := threadCPU()
	f()
	if cpu1, ok1 := threadCPU(); ok0 && ok1 {
		return cpu1 - cpu0
	}
	return time.Since(start)
}
