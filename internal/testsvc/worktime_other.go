//go:build !linux

package testsvc

import "time"

// threadCPU reports that the calling thread's CPU time cannot be read
// here: WorkTime measures wall time instead.
func threadCPU() (time.Duration, bool) { return 0, false }
