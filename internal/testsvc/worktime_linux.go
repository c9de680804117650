//go:build linux

package testsvc

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time the calling thread has used so far
// (CLOCK_THREAD_CPUTIME_ID), and whether it could be read. A goroutine
// reads its own work with it only while locked to its thread
// (see WorkTime): time spent waiting for a CPU is not counted.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
